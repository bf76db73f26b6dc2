package geo_test

import (
	"os"
	"path/filepath"
	"testing"

	"seckill/internal/geo"
	"seckill/internal/geo/geotest"
)

func TestCity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cities.mmdb")
	err := geotest.Write(path, map[string]geotest.Place{
		"203.0.113.0/24":  {CityEN: "Paris", CityZH: "巴黎", CountryEN: "France", CountryZH: "法国"},
		"198.51.100.0/24": {CountryEN: "Singapore", CountryZH: "新加坡"},
		"2001:db8::/32":   {CityEN: "Hangzhou", CountryEN: "China", CountryZH: "中国"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cities, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cities.Close()
	tests := []struct{ ip, lang, want string }{
		{"203.0.113.7", "en", "Paris, France"},
		{"203.0.113.7", "zh", "法国 巴黎"},
		{"::ffff:203.0.113.7", "en", "Paris, France"},
		{"198.51.100.9", "en", "Singapore"}, // no city: the country
		{"198.51.100.9", "zh", "新加坡"},
		{"2001:db8:1::5", "zh", "中国 Hangzhou"}, // no Chinese name: the English one
		{"192.0.2.1", "en", ""},                // not in the database
		{"not an address", "en", ""},
	}
	for _, tt := range tests {
		if got := cities.City(tt.ip, tt.lang); got != tt.want {
			t.Errorf("City(%q, %q) = %q, want %q", tt.ip, tt.lang, got, tt.want)
		}
	}
}

func TestOpenRefusesWhatIsNoCityDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.mmdb")
	if err := os.WriteFile(path, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := geo.Open(path); err == nil {
		t.Error("a file that is no database opened")
	}
	asn := filepath.Join(t.TempDir(), "asn.mmdb")
	if err := geotest.WriteType(asn, "GeoLite2-ASN", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := geo.Open(asn); err == nil {
		t.Error("an ASN database opened as a city database")
	}
	if _, err := geo.Open(filepath.Join(t.TempDir(), "missing.mmdb")); err == nil {
		t.Error("a missing file opened")
	}
}
