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

// sprig's date functions read the machine's clock when given no time, and
// durationRound when given one; here they read the render's (Input.Now),
// as now does, and the render records that it called them
// (Result.Nondeterministic).
func dateFuncs(h *holder, base template.FuncMap) template.FuncMap {
	durationRound := base["durationRound"].(func(any) string)
	inZone := func(name, layout string, date any, zone string) (string, error) {
		loc, err := h.location(zone)
		if err != nil {
			return "", err
		}
		t := h.timeOf(name, date)
		return budget.Bounded(h.meter(), 0, func() string { return name },
			func() (string, error) { return t.In(loc).Format(layout), nil }, strCost)
	}
	return template.FuncMap{
		"date":     func(layout string, date any) (string, error) { return inZone("date", layout, date, "Local") },
		"htmlDate": func(date any) (string, error) { return inZone("htmlDate", "2006-01-02", date, "Local") },
		"dateInZone": func(layout string, date any, zone string) (string, error) {
			return inZone("dateInZone", layout, date, zone)
		},
		"date_in_zone": func(layout string, date any, zone string) (string, error) {
			return inZone("date_in_zone", layout, date, zone)
		},
		"htmlDateInZone": func(date any, zone string) (string, error) { return inZone("htmlDateInZone", "2006-01-02", date, zone) },
		// How long ago date was, by the render's clock: it changes with
		// the clock whatever date is.
		"ago": func(date any) (string, error) {
			if err := h.meter().Check(); err != nil {
				return "", err
			}
			h.st.calledNondeterministic("ago")
			t := h.st.now // sprig's ago reads only these three types
			switch date.(type) {
			case time.Time, int64, int:
				t, _ = sprigTime(date, t)
			}
			return h.st.now.Sub(t).Round(time.Second).String(), nil
		},
		// A duration, or how long ago a time was, rounded to its largest
		// unit: sprig's, with the time's age by the render's clock. A
		// string argument is parsed, and the error dropped quotes it: it
		// is charged as copied (copies.go).
		"durationRound": func(d any) (string, error) {
			if t, ok := d.(time.Time); ok {
				h.st.calledNondeterministic("durationRound")
				d = int64(h.st.now.Sub(t)) // sprig reads an int64 as nanoseconds
			}
			s, _ := d.(string)
			return copyingCall(h, "durationRound", len(s), func() string { return durationRound(d) }, strCost)
		},
	}
}

// timeOf is the time a date function named name reads from date, the
// render's clock when date is no time.
func (h *holder) timeOf(name string, date any) time.Time {
	t, ok := sprigTime(date, time.Time{})
	if !ok {
		h.st.calledNondeterministic(name)
		return h.st.now
	}
	return t
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
// seconds since the epoch; else now, and false.
func sprigTime(date any, now time.Time) (time.Time, bool) {
	switch d := date.(type) {
	case time.Time:
		return d, true
	case *time.Time:
		return *d, true
	case int64:
		return time.Unix(d, 0), true
	case int:
		return time.Unix(int64(d), 0), true
	case int32:
		return time.Unix(int64(d), 0), true
	}
	return now, false
}
