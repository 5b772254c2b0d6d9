package telemetry

import "testing"

// TestLinkTimeCommit: a binary built without VCS information (the image,
// whose build context has no .git) reports the revision the Dockerfile
// passes with -X listingproxy/telemetry.commit=..., and one with VCS
// information keeps the toolchain's.
func TestLinkTimeCommit(t *testing.T) {
	saved := commit
	t.Cleanup(func() { commit = saved })
	commit = ""
	fromToolchain := ReadBuild().Commit
	commit = "0123abc"
	got := ReadBuild().Commit
	if fromToolchain == "unknown" && got != "0123abc" {
		t.Errorf("Commit = %q, want the link-time revision 0123abc", got)
	}
	if fromToolchain != "unknown" && got != fromToolchain {
		t.Errorf("Commit = %q, want the toolchain's %q", got, fromToolchain)
	}
}
