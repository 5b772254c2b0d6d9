package wire

import (
	"fmt"
	"testing"
	"time"
	_ "time/tzdata" // Australia/Sydney without relying on the host's zoneinfo

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// Fixture records. They are built here, not loaded, so that every edge the
// wire format names is visible next to the golden files it produces.

func sydney(tb testing.TB) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation("Australia/Sydney")
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

func ptr[T any](v T) *T { return &v }

// utc is a shorthand for an instant given in UTC.
func utc(year int, month time.Month, day, hour, min int) time.Time {
	return time.Date(year, month, day, hour, min, 0, 0, time.UTC)
}

// date is a calendar date as the model carries it: UTC midnight.
func date(year int, month time.Month, day int) time.Time {
	return time.Date(year, month, day, 0, 0, 0, 0, time.UTC)
}

// Text that needs escaping in both formats: XML and HTML specials, a
// control character (U+0001, not an XML character), a tab and a newline,
// non-ASCII letters, an emoji and U+2028 (LINE SEPARATOR).
const (
	trickyDescription = "Tom & Jerry's \"best\" <home> \u0001bell\there\nnext\u2028line Zoë 🏠"
	trickyCaption     = "Front \"view\" & <garden>\tat\ndusk"
	trickyName        = "Seán O'Brien & \"Sons\" <Ltd>"
)

func fixtureProperties() []upstream.Property {
	return []upstream.Property{
		{
			// display true, price_from without price_to, bedrooms set, three
			// photos of each type, no tour, one floorplan, one agent, one open
			// home, text that needs escaping.
			ID:             17,
			AgencyID:       "HB-AU-00017",
			LastUpdated:    utc(2026, time.November, 19, 22, 30), // Fri 09:30 +1100 in Sydney
			Approved:       date(2024, time.March, 1),
			StreetNumber:   "12",
			StreetName:     "Smith Street",
			AddressDisplay: true,
			Status:         "CURRENT",
			Latitude:       ptr(-33.8688),
			Longitude:      ptr(151.2093),
			PriceText:      "$650,000",
			PriceFrom:      ptr(650000.0),
			PriceType:      "",
			Category:       "Residential",
			PropertyType:   "House",
			Suburb:         "Surry Hills",
			Area:           "Inner City",
			Region:         "Sydney",
			Bedrooms:       ptr(3),
			Bathrooms:      ptr(2),
			FloorSize:      ptr(120.5),
			LotSize:        ptr(450.0),
			BuiltIn:        "1995",
			Description:    trickyDescription,
			PhotoCount:     3,
			FloorplanCount: 1,
			Photos: []upstream.Media{
				{URL: "https://img.example/1.jpg", Thumbnail: "https://img.example/t/1.jpg", Type: "Normal", Caption: trickyCaption, Position: 1},
				{URL: "https://img.example/2.jpg?w=800&h=600", Thumbnail: "https://img.example/t/2.jpg?w=80&h=60", Type: "Elevated", Caption: "", Position: 2},
				{URL: "https://img.example/3.jpg", Thumbnail: "https://img.example/t/3.jpg", Type: "Night", Caption: "Night", Position: 3},
			},
			Floorplans: []upstream.Media{
				{URL: "https://img.example/fp/1.png", Thumbnail: "https://img.example/fp/t/1.png", Caption: "Ground floor", Position: 1},
			},
			Agents: []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}},
			OpenHomes: []upstream.OpenHome{
				{Start: utc(2026, time.November, 27, 23, 0), End: utc(2026, time.November, 27, 23, 30)},
			},
		},
		{
			// display false, a price range, no bedrooms, one photo, one tour,
			// no floorplan, two agents, three open homes, never approved,
			// updated in winter (+1000).
			ID:               18,
			AgencyID:         "HB-AU-00018",
			LastUpdated:      utc(2026, time.June, 30, 14, 5),
			StreetNumber:     "3/45",
			StreetName:       "Ocean Parade",
			AddressDisplay:   false,
			Status:           "CONTRACT",
			Latitude:         ptr(-33.89),
			Longitude:        ptr(151.274),
			PriceText:        "Offers $1.2m – $1.35m",
			PriceFrom:        ptr(1200000.0),
			PriceTo:          ptr(1350000.0),
			PriceType:        "pbn",
			Category:         "Residential",
			PropertyType:     "Apartment",
			Suburb:           "Bondi",
			Area:             "Eastern Suburbs",
			Region:           "Sydney",
			Bathrooms:        ptr(1),
			FloorSize:        ptr(88.25),
			BuiltIn:          "1990s",
			Description:      "Sea views\u2028and sun",
			PhotoCount:       1,
			VirtualTourCount: 1,
			Photos: []upstream.Media{
				{URL: "https://img.example/18/1.jpg", Thumbnail: "https://img.example/18/t/1.jpg", Type: "Normal", Caption: "Lounge", Position: 1},
			},
			VirtualTours: []upstream.Media{
				{URL: "https://tours.example/18", Thumbnail: "https://tours.example/18/t.jpg", Caption: "Walkthrough", Position: 1},
			},
			Agents: []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}, {ID: 7, Name: trickyName}},
			OpenHomes: []upstream.OpenHome{
				{Start: utc(2026, time.July, 3, 23, 0), End: utc(2026, time.July, 3, 23, 45)},
				{Start: utc(2026, time.July, 10, 23, 0), End: utc(2026, time.July, 10, 23, 45)},
				{Start: utc(2026, time.July, 14, 7, 30), End: utc(2026, time.July, 14, 8, 0)},
			},
		},
		{
			// No prices, no photos, two tours, two floorplans, no agents, no
			// open homes, empty texts, a street name without a number.
			ID:               19,
			AgencyID:         "HB-AU-00019",
			LastUpdated:      utc(2025, time.January, 2, 3, 4),
			Approved:         date(2025, time.January, 1),
			StreetName:       "Lot 4 Vineyard Road",
			AddressDisplay:   false,
			Status:           "SOLD",
			Latitude:         ptr(-34.5),
			Longitude:        ptr(138.0),
			PriceText:        "Auction",
			PriceType:        "auction",
			Category:         "Agricultural",
			PropertyType:     "Vineyard",
			Suburb:           "Tanunda",
			Region:           "Barossa",
			Bedrooms:         ptr(0),
			LotSize:          ptr(250000.0),
			BuiltIn:          "1995-2000",
			VirtualTourCount: 2,
			FloorplanCount:   2,
			VirtualTours: []upstream.Media{
				{URL: "https://tours.example/19/a", Thumbnail: "https://tours.example/19/a.jpg", Caption: "Cellar", Position: 1},
				{URL: "https://tours.example/19/b", Thumbnail: "https://tours.example/19/b.jpg", Caption: "Rows", Position: 2},
			},
			Floorplans: []upstream.Media{
				{URL: "https://img.example/19/fp1.png", Thumbnail: "https://img.example/19/fp1t.png", Caption: "House", Position: 1},
				{URL: "https://img.example/19/fp2.png", Thumbnail: "https://img.example/19/fp2t.png", Caption: "Shed", Position: 2},
			},
		},
	}
}

func fixtureAgents() []upstream.Agent {
	return []upstream.Agent{
		{
			// With photo and one property.
			ID:              5,
			Name:            "Jane Doe",
			Username:        "jdoe",
			Phone:           "02 9000 0000",
			AfterHoursPhone: "02 9000 0001",
			MobilePhone:     "0400 000 000",
			Email:           "jane@agency.example",
			Description:     "Inner-city specialist.",
			PhotoURL:        "https://img.example/agents/5.jpg",
			WebsiteURL:      "https://agency.example/jane",
			PropertyCount:   1,
			Properties: []upstream.PropertyRef{
				{ID: 17, LastUpdated: utc(2026, time.November, 19, 22, 30), Address: "12 Smith Street", AgencyID: "HB-AU-00017"},
			},
		},
		{
			// Without photo, no properties, a name that needs escaping.
			ID:       6,
			Name:     trickyName,
			Username: "sobrien",
			Email:    "sean@agency.example",
		},
		{
			// Several properties; unicode, a control character and U+2028.
			ID:            7,
			Name:          "Zoë Ångström",
			Username:      "zoe",
			Phone:         "02 9000 0002",
			MobilePhone:   "0400 000 002",
			Email:         "zoe@agency.example",
			Description:   "Bondi & beyond\u2028\u0007since 2001 <3",
			PhotoURL:      "https://img.example/agents/7.jpg",
			WebsiteURL:    "https://agency.example/zoe?ref=a&b=c",
			PropertyCount: 3,
			Properties: []upstream.PropertyRef{
				{ID: 18, LastUpdated: utc(2026, time.June, 30, 14, 5), Address: "3/45 Ocean Parade", AgencyID: "HB-AU-00018"},
				{ID: 21, LastUpdated: utc(2026, time.March, 1, 0, 0), Address: "1 \"The Corso\" & Co", AgencyID: "HB-AU-00021"},
				{ID: 22, LastUpdated: utc(2026, time.April, 5, 15, 59), Address: "", AgencyID: "HB-AU-00022"},
			},
		},
	}
}

func fixtureErrors(n int) normalize.Errors {
	all := normalize.Errors{
		{Field: "approved_from", Message: `Invalid date "2024-01-01": use the format yyyymmdd`},
		{Field: "category", Message: `Invalid category "house": must be Residential, Commercial or Agricultural`},
	}
	if n == 1 {
		return normalize.Errors{{Field: "id", Message: `ID "abc" is not a valid number`}}
	}
	if n > len(all) {
		panic(fmt.Sprintf("fixtureErrors(%d)", n))
	}
	return all[:n]
}

// benchProperties returns n full properties shaped like a busy listing page:
// eight photos, one tour, one floorplan, two agents and two open homes each.
func benchProperties(n int) []upstream.Property {
	base := fixtureProperties()[0]
	ps := make([]upstream.Property, n)
	for i := range ps {
		p := base
		p.ID = int64(1000 + i)
		p.AgencyID = fmt.Sprintf("HB-AU-%05d", 1000+i)
		p.Description = "Light-filled family home close to shops & schools, with a north-facing garden."
		p.PriceTo = ptr(700000.0)
		p.Photos = make([]upstream.Media, 8)
		for j := range p.Photos {
			p.Photos[j] = upstream.Media{
				URL:       fmt.Sprintf("https://img.example/%d/%d.jpg", p.ID, j+1),
				Thumbnail: fmt.Sprintf("https://img.example/%d/t/%d.jpg", p.ID, j+1),
				Type:      "Normal",
				Caption:   "Living room",
				Position:  j + 1,
			}
		}
		p.PhotoCount = len(p.Photos)
		p.VirtualTours = []upstream.Media{{URL: "https://tours.example/x", Thumbnail: "https://tours.example/x.jpg", Caption: "Walkthrough", Position: 1}}
		p.VirtualTourCount = 1
		p.Floorplans = []upstream.Media{{URL: "https://img.example/fp.png", Thumbnail: "https://img.example/fpt.png", Caption: "Plan", Position: 1}}
		p.FloorplanCount = 1
		p.Agents = []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}, {ID: 7, Name: "Zoë Ångström"}}
		p.OpenHomes = []upstream.OpenHome{
			{Start: utc(2026, time.November, 27, 23, 0), End: utc(2026, time.November, 27, 23, 30)},
			{Start: utc(2026, time.December, 4, 23, 0), End: utc(2026, time.December, 4, 23, 30)},
		}
		ps[i] = p
	}
	return ps
}
