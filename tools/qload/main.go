// qload: the queue workload's open-loop load in a compiled language, for the rates the Python
// harness cannot offer from one core. Producers enqueue one message per operation on a uniform
// open-loop schedule; each payload carries its *intended* send time (CLOCK_MONOTONIC ns, the
// harness's payload format), so a producer or a server that falls behind shows as latency.
// Consumers claim closed loop (an idle poll sleeps -idle) and record send -> claim (claim
// returned - intended send) for every message whose intended send lies in the measured window;
// after the window the consumers keep claiming until every one of those messages was claimed or
// -drain passes, so the p99 counts every message meant for the window. Output: one JSON object.
//
// SQLite (-system sqlite) is embedded: qload then is the program the engine runs in, as the
// source study's Go program was, and its CPU is the engine's.
//
// -rate 0 is the burn-down (the capacity experiment's ceiling): no producers; the consumers claim
// flat out from a backlog the caller prefilled, until the window ends. Its figure is the claims
// returned inside the window; an empty claim inside it means the backlog ran out (a floor).
//
// -churn is the co-location study's queue churn: whole jobs (enqueue, claim, ack) per worker on
// an open-loop schedule, the queue's backlog kept (churn.go).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

type config struct {
	system, target                string
	rate                          float64
	producers, consumers, batch   int
	warmup, duration, drain, idle time.Duration
	enqueueSQL, claimSQL, ackSQL  string
	claimParams                   string
	enqueueParams, ackParams      string
	files                         []string // sqlite: the queue's database files (-target, comma-separated)
	settings                      string
	key                           string
	pipeline                      int
	seed                          int64
	payloadBytes                  int // > 0: every payload this many bytes; 0: the size mix
	samples                       string
	churn                         bool // whole jobs per worker: churn.go
}

// busyWaits counts the sleeps of SQLite's busy retry loop (every worker's), busyWaitNs their time
var busyWaits, busyWaitNs atomic.Int64

// Queue is one system's three verbs, as its adapter in the harness runs them.
type Queue interface {
	Enqueue(ctx context.Context, payload []byte) error
	Claim(ctx context.Context, batch int) ([]Claimed, error)
	Ack(ctx context.Context, claimed []Claimed) error
	Close()
}

// Claimed is one claimed message: the id its ack needs and its payload.
type Claimed struct {
	ID      int64
	Payload []byte
}

func monotonicNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// the harness's payload: {"enq_ns":<20 wide>,"id":"<id>","pad":"..."} of one of the mix's sizes
var sizeMix = []struct {
	size  int
	share float64
}{{256, 0.70}, {1024, 0.25}, {8192, 0.05}}

func mixSize(rng *rand.Rand) int {
	point, total := rng.Float64(), 0.0
	for _, s := range sizeMix {
		total += s.share
		if point < total {
			return s.size
		}
	}
	return sizeMix[len(sizeMix)-1].size
}

const filler = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// payload builds one message of `fixed` bytes, or of a size drawn from the mix when fixed is 0
// (the churn passes the Postgres side's fixed size, so both sides move the same bytes per job)
func payload(rng *rand.Rand, id string, enqNs int64, fixed int) []byte {
	size := fixed
	if size <= 0 {
		size = mixSize(rng)
	}
	head := fmt.Sprintf(`{"enq_ns":%20d,"id":"%s","pad":"`, enqNs, id)
	pad := size - len(head) - 2
	if pad < 0 {
		pad = 0
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(head)
	for i := 0; i < pad; i++ {
		b.WriteByte(filler[(i+rng.Intn(7))%len(filler)])
	}
	b.WriteString(`"}`)
	return []byte(b.String())
}

// enqNs reads the intended send time back from a payload (-1: not one of ours). The key may be
// anywhere and followed by spaces: pgmq stores jsonb, which reorders keys and drops the padding.
func enqNs(p []byte) int64 {
	const key = `"enq_ns":`
	i := strings.Index(string(p), key)
	if i < 0 {
		return -1
	}
	j := i + len(key)
	for j < len(p) && p[j] == ' ' {
		j++
	}
	k := j
	for k < len(p) && p[k] >= '0' && p[k] <= '9' {
		k++
	}
	v, err := strconv.ParseInt(string(p[j:k]), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// samples are microseconds; percentiles by rank over every sample (no histogram binning)
type samples struct {
	mu sync.Mutex
	us []int64
}

func (s *samples) add(us int64) { s.mu.Lock(); s.us = append(s.us, us); s.mu.Unlock() }

func (s *samples) summary() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.us)
	out := map[string]any{"count": n}
	if n == 0 {
		return out
	}
	sort.Slice(s.us, func(i, j int) bool { return s.us[i] < s.us[j] })
	at := func(q float64) int64 {
		r := int(q*float64(n)+0.999999) - 1 // the nearest-rank percentile
		if r < 0 {
			r = 0
		}
		if r >= n {
			r = n - 1
		}
		return s.us[r]
	}
	var sum int64
	for _, v := range s.us {
		sum += v
	}
	for name, q := range map[string]float64{"p50_us": 0.50, "p90_us": 0.90, "p99_us": 0.99, "p999_us": 0.999} {
		out[name] = at(q)
	}
	out["max_us"] = s.us[n-1]
	out["mean_us"] = float64(sum) / float64(n)
	return out
}

type run struct {
	cfg                              config
	start, windowStart, windowEnd    int64
	measured                         atomic.Int64 // messages whose intended send is in the window, sent
	claimedMeasured                  atomic.Int64
	claimedAll, sentAll              atomic.Int64
	errors                           atomic.Int64
	idlePolls                        atomic.Int64
	claimedInWindow, idleInWindow    atomic.Int64 // claims returned, and empty claims, inside the window
	endToEnd, lag, sendSvc, claimSvc samples
	producersDone                    atomic.Bool
	// every send and every claimed message, for the caller's exact histograms (-samples)
	logMu  sync.Mutex
	sends  [][3]int64 // intended offset ns, began offset ns, done offset ns
	claims [][3]int64 // intended offset ns, claim began offset ns, claim returned offset ns
	jobs   [][3]int64 // churn: intended offset ns, began offset ns, ack returned offset ns
}

func (r *run) produce(ctx context.Context, q Queue, worker int) {
	rng := rand.New(rand.NewSource(r.cfg.seed*1000 + int64(worker)))
	interval := float64(r.cfg.producers) / r.cfg.rate * 1e9
	// producers' schedules interleave: producer w sends at start + (k*P + w) / rate
	offset := float64(worker) / r.cfg.rate * 1e9
	end := r.windowEnd
	for k := 0; ; k++ {
		intended := r.start + int64(offset+float64(k)*interval)
		if intended >= end {
			return
		}
		// the payload is built before the wait, outside the timed send (an 8 KB one takes tens of µs);
		// a wait shorter than a millisecond may end up to ~1 ms late while the process is idle (Go's
		// timers): the lag is recorded (schedule_lag) and counted in send -> claim, never hidden
		message := payload(rng, fmt.Sprintf("g%d-%d", worker, k), intended, r.cfg.payloadBytes)
		if wait := intended - monotonicNs(); wait > 0 {
			time.Sleep(time.Duration(wait))
		}
		began := monotonicNs()
		err := q.Enqueue(ctx, message)
		done := monotonicNs()
		r.sentAll.Add(1)
		if r.cfg.samples != "" && err == nil {
			r.logMu.Lock()
			r.sends = append(r.sends, [3]int64{intended - r.start, began - r.start, done - r.start})
			r.logMu.Unlock()
		}
		if err != nil {
			r.errors.Add(1)
			fmt.Fprintln(os.Stderr, "enqueue:", err)
			continue
		}
		if intended >= r.windowStart {
			r.measured.Add(1)
			r.lag.add((began - intended) / 1000)
			r.sendSvc.add((done - began) / 1000)
		}
	}
}

func (r *run) consume(ctx context.Context, q Queue, deadline int64) {
	for monotonicNs() < deadline {
		if r.producersDone.Load() && r.claimedMeasured.Load() >= r.measured.Load() {
			return
		}
		began := monotonicNs()
		claimed, err := q.Claim(ctx, r.cfg.batch)
		returned := monotonicNs()
		if err != nil {
			r.errors.Add(1)
			fmt.Fprintln(os.Stderr, "claim:", err)
			time.Sleep(r.cfg.idle)
			continue
		}
		returnedInWindow := returned >= r.windowStart && returned < r.windowEnd
		if len(claimed) == 0 {
			r.idlePolls.Add(1)
			if returnedInWindow {
				r.idleInWindow.Add(1)
			}
			time.Sleep(r.cfg.idle)
			continue
		}
		if returnedInWindow {
			r.claimedInWindow.Add(int64(len(claimed)))
		}
		inWindow := false
		for _, c := range claimed {
			intended := enqNs(c.Payload)
			r.claimedAll.Add(1)
			if r.cfg.samples != "" && intended >= 0 {
				r.logMu.Lock()
				r.claims = append(r.claims, [3]int64{intended - r.start, began - r.start, returned - r.start})
				r.logMu.Unlock()
			}
			if intended >= r.windowStart && intended < r.windowEnd {
				r.claimedMeasured.Add(1)
				r.endToEnd.add((returned - intended) / 1000)
				inWindow = true
			}
		}
		if inWindow || (r.cfg.rate == 0 && returnedInWindow) { // a burn-down's backlog was sent before the run
			r.claimSvc.add((returned - began) / 1000)
		}
		if err := q.Ack(ctx, claimed); err != nil {
			r.errors.Add(1)
			fmt.Fprintln(os.Stderr, "ack:", err)
		}
	}
}

func main() {
	var c config
	flag.StringVar(&c.system, "system", "postgres", "postgres, redis or sqlite")
	flag.StringVar(&c.target, "target", "", "a libpq URL (postgres), host:port (redis) or the database files, comma-separated (sqlite)")
	flag.Float64Var(&c.rate, "rate", 1000, "offered messages per second, all producers together")
	flag.IntVar(&c.producers, "producers", 4, "producer connections")
	flag.IntVar(&c.consumers, "consumers", 4, "consumer connections")
	flag.IntVar(&c.batch, "batch", 1, "messages per claim")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured lead-in")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "the measured window")
	flag.DurationVar(&c.drain, "drain", 10*time.Second, "after the window, at most this long to claim what it sent")
	flag.DurationVar(&c.idle, "idle", time.Millisecond, "sleep after an empty claim")
	flag.StringVar(&c.enqueueSQL, "enqueue-sql", "", "postgres, sqlite: enqueue one payload")
	flag.StringVar(&c.enqueueParams, "enqueue-params", "payload", "sqlite: the enqueue's parameters in order: payload, now")
	flag.StringVar(&c.claimSQL, "claim-sql", "", "postgres: claim, returning (id, payload); sqlite: returning (rowid, payload, attempts)")
	flag.StringVar(&c.claimParams, "claim-params", "batch", "the claim's parameters in order: batch, consumer (sqlite also: now)")
	flag.StringVar(&c.ackSQL, "ack-sql", "", "postgres: ack ($1 bigint[]), empty: the claim removed them; sqlite: ack one row")
	flag.StringVar(&c.ackParams, "ack-params", "id,consumer", "sqlite: the ack's parameters in order: id, consumer")
	flag.StringVar(&c.settings, "settings", "", "postgres: session settings; sqlite: PRAGMAs (name=value,...)")
	flag.StringVar(&c.key, "key", "jobs", "redis: the queue's list")
	flag.IntVar(&c.pipeline, "pipeline", 1, "redis: commands per round trip")
	flag.Int64Var(&c.seed, "seed", 42, "payload sizes and fillers")
	flag.IntVar(&c.payloadBytes, "payload-bytes", 0, "every payload this many bytes (0: the mix of 256, 1024 and 8192)")
	flag.BoolVar(&c.churn, "churn", false, "each of -consumers workers runs whole jobs (enqueue, claim, ack) open loop at -rate together; -producers 0")
	flag.StringVar(&c.samples, "samples", "", "write every send and claim here (CSV: kind,intended_ns,began_ns,done_ns from the run's start)")
	flag.Parse()
	if err := validate(c); err != nil {
		fmt.Fprintln(os.Stderr, "qload: error:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	if c.system == "sqlite" {
		c.files = strings.Split(c.target, ",")
	}
	open := func(name string, worker int) (Queue, error) {
		switch c.system {
		case "redis":
			return openRedis(ctx, c, name)
		case "sqlite":
			return openSQLite(ctx, c, name, worker)
		}
		return openPostgres(ctx, c, name)
	}
	var producers, consumers []Queue
	for i := 0; i < c.producers; i++ {
		q, err := open(fmt.Sprintf("producer%d", i), i)
		if err != nil {
			fail(err)
		}
		producers = append(producers, q)
	}
	for i := 0; i < c.consumers; i++ {
		q, err := open(fmt.Sprintf("qload%d", i), i)
		if err != nil {
			fail(err)
		}
		consumers = append(consumers, q)
	}
	r := &run{cfg: c}
	burnDown := c.rate == 0
	if c.samples != "" { // sized up front: a slice growing under the lock would stall every worker
		expected := int(c.rate*(c.warmup+c.duration).Seconds()*1.1) + 1024
		if burnDown { // claims at up to ~50k/s from one load core
			expected = int(50000*(c.warmup+c.duration).Seconds()) + 1024
		}
		r.sends, r.claims = make([][3]int64, 0, expected), make([][3]int64, 0, expected)
		if c.churn {
			r.jobs = make([][3]int64, 0, expected)
		}
	}
	r.start = monotonicNs() + int64(50*time.Millisecond)
	r.windowStart = r.start + c.warmup.Nanoseconds()
	r.windowEnd = r.windowStart + c.duration.Nanoseconds()
	deadline := r.windowEnd + c.drain.Nanoseconds()
	if burnDown { // nothing to drain: the window's claims are the figure
		deadline = r.windowEnd
	}
	var pw, cw sync.WaitGroup
	for i, q := range producers {
		pw.Add(1)
		go func(i int, q Queue) { defer pw.Done(); r.produce(ctx, q, i) }(i, q)
	}
	for i, q := range consumers {
		cw.Add(1)
		if c.churn {
			go func(i int, q Queue) { defer cw.Done(); r.churn(ctx, q, i) }(i, q)
			continue
		}
		go func(q Queue) { defer cw.Done(); r.consume(ctx, q, deadline) }(q)
	}
	pw.Wait()
	if !burnDown { // a burn-down's consumers run to the window's end, not until the sends are claimed
		r.producersDone.Store(true)
	}
	cw.Wait()
	finished := monotonicNs()
	for _, q := range append(producers, consumers...) {
		q.Close()
	}
	measured, claimed := r.measured.Load(), r.claimedMeasured.Load()
	out := map[string]any{
		"tool": "qload", "system": c.system, "offered_per_s": c.rate, "window_s": c.duration.Seconds(),
		"warmup_s": c.warmup.Seconds(), "producers": c.producers, "consumers": c.consumers, "batch": c.batch,
		"payload_bytes": c.payloadBytes, // 0: the size mix
		"sent_in_window": measured, "achieved_per_s": float64(measured) / c.duration.Seconds(),
		"claimed_of_window": claimed, "not_claimed_by_cutoff": measured - claimed,
		"drain_s": float64(finished-r.windowEnd) / 1e9, "sent_total": r.sentAll.Load(),
		"claimed_total": r.claimedAll.Load(), "errors": r.errors.Load(), "idle_polls": r.idlePolls.Load(),
		"send_to_claim": r.endToEnd.summary(), "schedule_lag": r.lag.summary(),
		"enqueue_service": r.sendSvc.summary(), "claim_service": r.claimSvc.summary(),
		"claimed_in_window": r.claimedInWindow.Load(), "idle_polls_in_window": r.idleInWindow.Load(),
		"busy_waits": busyWaits.Load(), "busy_wait_ns": busyWaitNs.Load(),
		"start_monotonic_ns": r.start, // the samples' offsets are from here (CLOCK_MONOTONIC)
	}
	if c.system == "sqlite" {
		out["sqlite_version"] = sqliteVersion()
	}
	if c.churn { // a job's latency is intended start -> ack returned (send_to_claim holds it)
		out["mode"], out["job_latency"] = "churn", out["send_to_claim"]
		out["claimed_of_window"], out["not_claimed_by_cutoff"] = measured, 0
		delete(out, "send_to_claim")
	}
	if burnDown {
		out["mode"], out["achieved_per_s"] = "burn-down", float64(r.claimedInWindow.Load())/c.duration.Seconds()
	}
	if c.samples != "" {
		if err := r.writeSamples(c.samples); err != nil {
			fail(err)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}

func validate(c config) error {
	switch {
	case c.system != "postgres" && c.system != "redis" && c.system != "sqlite":
		return fmt.Errorf("-system %q: use postgres, redis or sqlite", c.system)
	case c.target == "":
		return fmt.Errorf("-target is required (a libpq URL, host:port for redis, the database files for sqlite)")
	case c.churn && (c.rate <= 0 || c.producers != 0):
		return fmt.Errorf("-churn runs whole jobs at -rate (> 0) on -consumers workers: give -producers 0")
	case c.rate == 0 && c.producers != 0:
		return fmt.Errorf("-rate 0 is the burn-down of a prefilled queue: give -producers 0")
	case c.payloadBytes < 0:
		return fmt.Errorf("-payload-bytes %d: give a size in bytes, or 0 for the size mix", c.payloadBytes)
	case c.rate < 0 || (c.rate > 0 && c.producers < 1 && !c.churn) || c.consumers < 1 || c.batch < 1 || c.pipeline < 1:
		return fmt.Errorf("-rate must be >= 0 (0: burn-down), -producers (with a rate), -consumers, -batch and -pipeline positive")
	case c.system == "postgres" && (c.enqueueSQL == "" || c.claimSQL == ""):
		return fmt.Errorf("postgres needs -enqueue-sql and -claim-sql (the adapter's statements)")
	case c.system == "sqlite" && (c.enqueueSQL == "" || c.claimSQL == "" || c.ackSQL == ""):
		return fmt.Errorf("sqlite needs -enqueue-sql, -claim-sql and -ack-sql (the adapter's statements)")
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "qload: error:", err)
	os.Exit(1)
}

func (r *run) writeSamples(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, kind := range []struct {
		name string
		rows [][3]int64
	}{{"send", r.sends}, {"claim", r.claims}, {"job", r.jobs}} {
		for _, row := range kind.rows {
			fmt.Fprintf(w, "%s,%d,%d,%d\n", kind.name, row[0], row[1], row[2])
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
