package scaffold

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestInitParsesNothing: every command of the binary runs this package's
// init, `run` included, so the scaffold's templates are parsed only when
// `create` asks for them. The test binary runs again with
// GODEBUG=inittrace=1, which prints each package's init and what it
// allocated.
func TestInitParsesNothing(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := regexp.MustCompile(`init github.com/tmplop/operator/engine/scaffold @[^,]*, [^,]*, (\d+) bytes`).FindSubmatch(out)
	if m == nil {
		return // no line: the package's init allocates nothing, so the runtime prints none
	}
	// The two regexps of the names allocate about 12 KB; the templates 53 KB more.
	if n, _ := strconv.Atoi(string(m[1])); n > 24<<10 {
		t.Errorf("the package's init allocates %d bytes, want at most 24 KiB (templates parsed at init?)", n)
	}
}
