package render

// What the template functions do besides returning a value, as the steps
// that read templates without running them, or explain a render, need to
// know it. Each fact is written here once, beside the function map, and
// funcfacts_test.go ties it to the map: every name is a function
// templates can call, and a probe of every function (each called with
// arguments of every shape, again after the machine's clock moved, and
// with another render clock) finds no function that differs from call to
// call, or prints lines of its own, that is not listed.

// nondeterminism is how the result of a function can differ from one call
// to the next with the same arguments.
type nondeterminism int

const (
	// random: every call (randomness, a salt, a key). Such functions are
	// wrapped so that the render records each call (markCalls).
	random nondeterminism = iota + 1
	// clock: the render's clock (Input.Now), which is the same within a
	// render and differs in the next, when the function reads it (now,
	// or a date function given no time). Such functions record the calls
	// that read it themselves (renderState.calledNondeterministic).
	clock
)

// nondeterministic are the functions whose result differs from one call
// to the next; a render records which files called them
// (Result.Nondeterministic), so that a child that changes on every render
// can be explained.
var nondeterministic = map[string]nondeterminism{
	"randAlpha": random, "randAlphaNum": random, "randAscii": random, "randNumeric": random, "randBytes": random, "randInt": random,
	"uuidv4": random, "shuffle": random, "bcrypt": random, "htpasswd": random, "encryptAES": random,
	"genPrivateKey": random, "genCA": random, "genCAWithKey": random, "genSelfSignedCert": random,
	"genSelfSignedCertWithKey": random, "genSignedCert": random, "genSignedCertWithKey": random,

	"now": clock, "ago": clock, "durationUntil": clock, "durationRound": clock,
	"date": clock, "htmlDate": clock, "dateInZone": clock, "date_in_zone": clock, "htmlDateInZone": clock,
}

// printsLines are the functions that print lines of their own from values
// that have none: YAML, TOML and indented JSON, indentation, templates,
// word wrapping, certificates and keys, decoded bytes.
var printsLines = map[string]bool{
	"toYaml": true, "toYamlPretty": true, "toToml": true,
	"toPrettyJson": true, "mustToPrettyJson": true,
	"indent": true, "nindent": true, "include": true, "tpl": true,
	"println": true, "wrap": true, "wrapWith": true,
	"b64dec": true, "b32dec": true, "decryptAES": true,
	"genCA": true, "genCAWithKey": true, "genSelfSignedCert": true, "genSelfSignedCertWithKey": true,
	"genSignedCert": true, "genSignedCertWithKey": true, "genPrivateKey": true, "buildCustomCert": true,
}

// PrintsLines reports whether the template function name may print lines
// of its own from values that have none (toYaml, nindent, include...):
// what a reader of a template's text (engine/catalog/childkinds) must
// take to be any number of lines.
func PrintsLines(name string) bool { return printsLines[name] }
