package main

import (
	"strings"
	"testing"
	"time"
)

func heldGoal() holdGoal {
	g := holdGoal{Clusters: 100, Held: 10 * time.Minute, PSSPerTenant: 190 << 20, Commit: "abc1234"}
	for i := range 10 {
		g.Minutes = append(g.Minutes, readyzMinute{At: time.Duration(i) * time.Minute, Asked: 100, Answered: 100})
	}
	return g
}

func TestHoldGoalMet(t *testing.T) {
	if ok, why := heldGoal().met(goalClusters, goalHeld, goalPSS); !ok {
		t.Fatalf("a hold of 100 for 10 minutes at 190 MiB, all answering: not met: %s", why)
	}
}

// Each way a hold falls short of the goal is named; one unanswered /readyz is enough.
func TestHoldGoalNotMet(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*holdGoal)
		want   string
	}{
		"fewer clusters": {func(g *holdGoal) { g.Clusters = 85 }, "85 clusters held, 100 wanted"},
		"shorter":        {func(g *holdGoal) { g.Held = 5 * time.Minute }, "held 5m0s, 10m0s wanted"},
		"one unanswered": {func(g *holdGoal) { g.Minutes[7].Answered = 99 }, "at 7m0s only 99 of 100 answered /readyz"},
		"too big":        {func(g *holdGoal) { g.PSSPerTenant = 201 << 20 }, "over"},
	} {
		t.Run(name, func(t *testing.T) {
			g := heldGoal()
			tc.change(&g)
			ok, why := g.met(goalClusters, goalHeld, goalPSS)
			if ok || !strings.Contains(why, tc.want) {
				t.Fatalf("met=%t why=%q, want not met naming %q", ok, why, tc.want)
			}
			if v := g.verdict(); !strings.HasPrefix(v, "goal not met: ") {
				t.Fatalf("verdict %q", v)
			}
		})
	}
}

// The goals section judges P6 by the create's own median (the subject), not by the ratio.
func TestGoalsSectionCreateMedian(t *testing.T) {
	f := &figure{ID: "P6", Commit: "abc1234", Runs: []pair{{Subject: 1.9, Baseline: 1.5}, {Subject: 2.4, Baseline: 1.6}, {Subject: 1.8, Baseline: 1.4}}}
	doc := goalsSection(f, nil)
	if !strings.Contains(doc, "median 1.90 s (1.80 - 2.40, 3 runs") || !strings.Contains(doc, "| yes |") {
		t.Fatalf("P6 at a 1.90 s median should meet the 2 s goal:\n%s", doc)
	}
	f.Runs[0].Subject = 2.1
	if doc := goalsSection(f, nil); !strings.Contains(doc, "median 2.10 s") || strings.Contains(doc, "| yes |") {
		t.Fatalf("P6 at a 2.10 s median should not meet the goal:\n%s", doc)
	}
	g := heldGoal()
	if doc := goalsSection(nil, &g); !strings.Contains(doc, "every tenant answered /readyz in 10 of 10 minutes") || !strings.Contains(doc, "| yes |") {
		t.Fatalf("the hold's row:\n%s", doc)
	}
}

// With a hold on file, P7's row links the Goals section and P7 leaves the not-yet-reproduced list.
func TestReportRendersTheHold(t *testing.T) {
	g := heldGoal()
	doc := renderReport(nil, singleRuns{p7: &g}, "abc1234", "2 CPUs", "P7", time.Now(), time.Minute)
	if !strings.Contains(doc, "| [P7](#goals) |") || !strings.Contains(doc, "goal met: 100 held 10m0s") {
		t.Fatalf("no P7 row:\n%s", doc)
	}
	if _, notYet, _ := strings.Cut(doc, "## Not yet reproduced"); strings.Contains(notYet, "| P7 |") {
		t.Fatalf("P7 is still listed as not reproduced:\n%s", notYet)
	}
	if doc := renderReport(nil, singleRuns{}, "", "", "", time.Now(), 0); !strings.Contains(doc, "| P7 | 100 local tenant control planes") || !strings.Contains(doc, "not yet held") {
		t.Fatalf("without a hold P7 should be listed as not run:\n%s", doc)
	}
}
