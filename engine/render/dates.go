package render

import (
	"fmt"
	"text/template"
	"time"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// sprig's dateInZone and htmlDateInZone call time.LoadLocation on every
// call, which reads the zone from disk, or the directory of Go's zoneinfo
// zip for a name that is not a zone: 40 KiB and a file read a call. The
// versions here keep the locations an instance has loaded, and charge a
// load.

const (
	maxZones     = 64       // locations an instance keeps
	zoneLoadCost = 64 << 10 // what loading one allocates, about
)

func dateFuncs(h *holder) template.FuncMap {
	inZone := func(layout string, date any, zone string) (string, error) {
		loc, err := h.location(zone)
		if err != nil {
			return "", err
		}
		return budget.Bounded(h.meter(), 0, func() string { return "dateInZone" },
			func() (string, error) { return sprigTime(date).In(loc).Format(layout), nil }, strCost)
	}
	return template.FuncMap{
		"dateInZone":     inZone,
		"date_in_zone":   inZone,
		"htmlDateInZone": func(date any, zone string) (string, error) { return inZone("2006-01-02", date, zone) },
	}
}

// location is time.LoadLocation(zone), or UTC when zone is not a zone, as
// sprig falls back.
func (h *holder) location(zone string) (*time.Location, error) {
	if err := h.meter().Check(); err != nil {
		return nil, err
	}
	if loc, ok := h.zones[zone]; ok {
		return loc, nil
	}
	loc, err := budget.Bounded(h.meter(), zoneLoadCost, func() string { return fmt.Sprintf("loading the time zone %.40q", zone) },
		func() (*time.Location, error) {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				loc = time.UTC
			}
			return loc, nil
		}, nil)
	if err != nil {
		return nil, err
	}
	if h.zones == nil {
		h.zones = map[string]*time.Location{}
	}
	if len(h.zones) < maxZones {
		h.zones[zone] = loc
	}
	return loc, nil
}

// sprigTime is the time sprig's date functions read from date: a time, or
// seconds since the epoch; anything else is the current time.
func sprigTime(date any) time.Time {
	switch d := date.(type) {
	case time.Time:
		return d
	case *time.Time:
		return *d
	case int64:
		return time.Unix(d, 0)
	case int:
		return time.Unix(int64(d), 0)
	case int32:
		return time.Unix(int64(d), 0)
	}
	return time.Now()
}
