package upstream

// CountryZones maps each country segment listingproxy knows to the IANA
// time zone its local times (open homes) are written in. It is the one
// table of countries: config accepts only these in countries, proxy serves
// them all by default, and the CRM adapter reads local times in them. It
// returns a new map each time, so no caller can change another's.
func CountryZones() map[string]string {
	return map[string]string{
		"au": "Australia/Sydney",
		"nz": "Pacific/Auckland",
	}
}
