// Package geotest writes tiny location databases in MaxMind's format, for tests of code that reads them.
package geotest

import (
	"fmt"
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Place is what the database says of a network: a city and a country, each in English and Chinese
// (a name left empty is not written).
type Place struct {
	CityEN, CityZH, CountryEN, CountryZH string
}

// Write writes a GeoLite2-City-shaped database to path holding places, keyed by network in CIDR form
// ("203.0.113.0/24", "2001:db8::/32"). Reserved networks (the documentation ones tests use) are allowed.
func Write(path string, places map[string]Place) error {
	return WriteType(path, "GeoLite2-City", places)
}

// WriteType is Write with another database type in its metadata ("GeoLite2-ASN"): a database of the
// wrong kind.
func WriteType(path, databaseType string, places map[string]Place) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: databaseType, RecordSize: 24, IPVersion: 6,
		IncludeReservedNetworks: true, Languages: []string{"en", "zh-CN"},
	})
	if err != nil {
		return err
	}
	for cidr, p := range places {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			return fmt.Errorf("network %q: %w", cidr, err)
		}
		rec := mmdbtype.Map{}
		if names := namesOf(p.CityEN, p.CityZH); len(names) > 0 {
			rec["city"] = mmdbtype.Map{"names": names}
		}
		if names := namesOf(p.CountryEN, p.CountryZH); len(names) > 0 {
			rec["country"] = mmdbtype.Map{"names": names}
		}
		if err := tree.Insert(network, rec); err != nil {
			return fmt.Errorf("network %q: %w", cidr, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := tree.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func namesOf(en, zh string) mmdbtype.Map {
	m := mmdbtype.Map{}
	if en != "" {
		m["en"] = mmdbtype.String(en)
	}
	if zh != "" {
		m["zh-CN"] = mmdbtype.String(zh)
	}
	return m
}
