package loadtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/loadtest"
)

// TestScalperWithBothRules runs the scalper scenario small (300 people, a scalper with 40 accounts, 20
// units) on a server of its own, built from this tree, with both rules on: what a person and the public
// would see. The books add up, no person is refused or shadowed wrongly, and the scalper is held to the
// entrants its delivery addresses allow, none of them outside the shadow line.
func TestScalperWithBothRules(t *testing.T) {
	testenv.Long(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "seckill")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rdb := testenv.Redis(t)
	opt := rdb.Options()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute) // CI runs the packages side by side: 2.5 min alone, past 4 beside the app tests
	defer cancel()
	o := loadtest.ScalperOptions{People: 150, Accounts: 40, Units: 10, Seed: 1}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	both, err := loadtest.VariantsNamed("both")
	if err != nil {
		t.Fatal(err)
	}
	series, err := loadtest.RunScalperSeries(ctx, both, 1, o, func(ctx context.Context, v loadtest.ScalperVariant) (*loadtest.Server, error) {
		return loadtest.StartServer(ctx, loadtest.ServerOptions{Bin: bin, DatabaseURL: testenv.PostgresSchema(t),
			RedisURL: fmt.Sprintf("redis://%s/%d", opt.Addr, opt.DB), Env: v.Env()})
	})
	if err != nil {
		t.Fatal(err)
	}
	r := series[0].Runs[0]
	t.Log(r.Line())
	if !r.Audit.OK() {
		t.Errorf("the audit failed: %v", r.Audit.Failures)
	}
	if r.FalsePositives() != 0 {
		t.Errorf("people refused or shadowed wrongly: %v", r.Wrong)
	}
	if r.RuleWorking == 0 {
		t.Errorf("no family's second account was refused by the address rule: %v", r.People)
	}
	// 40 accounts, one delivery address: one entrant at most, flagged (its accounts made in a burst, on a
	// shared device with refused joins), held in the shadow line.
	if r.ScalperEntrants > 1 || r.ScalperOutside > 0 || r.ScalperBought > 0 || !r.ShadowLine || r.ScalperFlagged != r.ScalperEntrants {
		t.Errorf("the scalper had %d entrants, %d flagged, %d outside the shadow line (%s), and won %d units", r.ScalperEntrants,
			r.ScalperFlagged, r.ScalperOutside, r.OutsideFrom, r.ScalperBought)
	}
	if r.PeopleBought != int(o.Units) {
		t.Errorf("the people bought %d of %d units", r.PeopleBought, o.Units)
	}
}
