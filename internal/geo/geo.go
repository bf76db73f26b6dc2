// Package geo says where an address is, by city, from a MaxMind-format database (GeoLite2 or GeoIP2 City,
// or a compatible one) that the operator provides: the phone's QR login page shows it beside the address.
package geo

import (
	"fmt"
	"net/netip"

	"github.com/oschwald/geoip2-golang/v2"
)

// Cities reads one database, memory-mapped; safe for concurrent use.
type Cities struct {
	db *geoip2.Reader
}

// Open opens the database at path. A file that is not a City or Country database is an error, so a wrong
// GEOIP_DB fails at start rather than naming no city ever.
func Open(path string) (*Cities, error) {
	db, err := geoip2.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the location database %s: %w", path, err)
	}
	// An ASN or ISP database opens too, and would then refuse every lookup.
	if _, err := db.City(netip.IPv4Unspecified()); err != nil {
		db.Close()
		return nil, fmt.Errorf("the location database %s names no cities: %w", path, err)
	}
	return &Cities{db: db}, nil
}

// Close unmaps the database.
func (c *Cities) Close() error { return c.db.Close() }

// City names where ip is, in lang ("zh" in Simplified Chinese, anything else in English): "Paris, France",
// "法国 巴黎" (large to small, as Chinese writes places); the country alone when the database knows no
// city; "" when it knows nothing (a private address, one not in the database) or ip is no address.
func (c *Cities) City(ip, lang string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	rec, err := c.db.City(addr.Unmap().WithZone(""))
	if err != nil || rec == nil {
		return ""
	}
	city, country := name(rec.City.Names, lang), name(rec.Country.Names, lang)
	switch {
	case city == "":
		return country
	case country == "":
		return city
	case lang == "zh":
		return country + " " + city
	}
	return city + ", " + country
}

// name is a place's name in lang, or in English when the database has none in lang.
func name(n geoip2.Names, lang string) string {
	if lang == "zh" && n.SimplifiedChinese != "" {
		return n.SimplifiedChinese
	}
	return n.English
}
