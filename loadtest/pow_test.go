package loadtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	altcha "github.com/altcha-org/altcha-lib-go"
)

// The plain solver finds the number ALTCHA's own library finds, and its payload passes the library's
// verification: what the server checks.
func TestSolveSHA256AnswersWhatALTCHAVerifies(t *testing.T) {
	for _, n := range []int64{0, 7, 12_345, 99_999} {
		ch, err := altcha.CreateChallenge(altcha.ChallengeOptions{Algorithm: altcha.SHA256, MaxNumber: 100_000, Number: &n, HMACKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := solveSHA256(context.Background(), ch.Challenge, ch.Salt, ch.MaxNumber)
		if err != nil || got != n {
			t.Fatalf("solved %d, %v; want %d", got, err, n)
		}
		p, _ := json.Marshal(altcha.Payload{Algorithm: ch.Algorithm, Challenge: ch.Challenge, Number: got, Salt: ch.Salt, Signature: ch.Signature})
		if ok, err := altcha.VerifySolution(base64.StdEncoding.EncodeToString(p), "k", false); !ok || err != nil {
			t.Fatalf("ALTCHA refused the solution %d: %v", got, err)
		}
	}
	ch, _ := altcha.CreateChallenge(altcha.ChallengeOptions{Algorithm: altcha.SHA256, MaxNumber: 1000, Number: ptr(int64(900)), HMACKey: "k"})
	if _, err := solveSHA256(context.Background(), ch.Challenge, ch.Salt, 899); err == nil {
		t.Fatal("a challenge whose number is past maxnumber was solved")
	}
}

// BenchmarkSolve compares the plain loop's tries a second with ALTCHA's library on the same challenge.
func BenchmarkSolve(b *testing.B) {
	ch, _ := altcha.CreateChallenge(altcha.ChallengeOptions{Algorithm: altcha.SHA256, MaxNumber: 100_000, Number: ptr(int64(50_000)), HMACKey: "k"})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := solveSHA256(context.Background(), ch.Challenge, ch.Salt, ch.MaxNumber); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)*50_001/b.Elapsed().Seconds()/1e6, "Mtries/s")
	})
	b.Run("altcha", func(b *testing.B) {
		for b.Loop() {
			if s, err := altcha.SolveChallenge(ch.Challenge, ch.Salt, altcha.SHA256, int(ch.MaxNumber), 0, nil); s == nil || err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)*50_001/b.Elapsed().Seconds()/1e6, "Mtries/s")
	})
}

func ptr[T any](v T) *T { return &v }
