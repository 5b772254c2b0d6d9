package testkit

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BinlogMariaDB starts a MariaDB server of the test's own, with its binary
// log on (ROW format), on a free loopback port, and returns the DSN of its
// root user (no password) for the MySQL driver, without a database. The
// server is stopped by PID at the end of the test. It skips the test when
// LISTINGPROXY_TEST_MYSQL_DSN is unset (the MariaDB tests are not wanted)
// and fails it when mariadbd or mariadb-install-db is missing then.
func BinlogMariaDB(t testing.TB) (dsn string, stop func()) {
	t.Helper()
	if os.Getenv("LISTINGPROXY_TEST_MYSQL_DSN") == "" {
		t.Skip("LISTINGPROXY_TEST_MYSQL_DSN is not set: set it (CI does) to run the MariaDB tests, the binlog feed's among them (they start their own mariadbd --log-bin)")
	}
	mariadbd, err := exec.LookPath("mariadbd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/mariadbd", "/usr/libexec/mariadbd"} {
			if _, e := os.Stat(p); e == nil {
				mariadbd, err = p, nil
			}
		}
	}
	install, ierr := exec.LookPath("mariadb-install-db")
	if err != nil || ierr != nil {
		t.Fatalf("the binlog tests start their own MariaDB: mariadbd (%v) and mariadb-install-db (%v) must be installed", err, ierr)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	log, err := os.Create(filepath.Join(dir, "mariadbd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mariadbd, "--no-defaults", "--datadir="+data, "--user=root",
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--socket="+filepath.Join(dir, "s.sock"),
		"--pid-file="+filepath.Join(dir, "m.pid"), "--log-bin="+filepath.Join(data, "bin"), "--binlog-format=ROW",
		"--server-id=1", "--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() {
		select {
		case <-exited:
			return
		default:
		}
		// SIGTERM is mariadbd's shutdown; it ignores SIGINT (without
		// --gdb), which left every test waiting out the kill's 30 s.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(stop)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	WaitFor(t, "the test's mariadbd to accept connections", func() bool {
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("mariadbd exited:\n%s", b)
		default:
		}
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", addr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return "root@tcp(" + addr + ")/", stop
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
