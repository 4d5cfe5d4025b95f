// psload: the pub/sub workload's open-loop load in a compiled language, for the fan-outs the
// Python harness cannot receive from one core (50 subscriber processes share it). Publishers
// publish one message per operation on a uniform open-loop schedule (-rate 0: closed loop, flat
// out, for a ceiling), with the adapters' own verbs (SELECT pg_notify(channel, payload)
// autocommitted, or PUBLISH); every payload carries its
// publisher, its sequence number and its *intended* publish time (CLOCK_MONOTONIC ns), so a
// publisher or a server that falls behind shows as delivery latency. Subscribers (one connection
// each: LISTEN, or SUBSCRIBE) are subscribed before the first publish and record, per message,
// whether it arrived (once, twice, out of order) and its delivery latency (received - intended
// publish) for every message whose intended publish lies in the measured window; after the window
// they keep reading until every such message arrived or -drain passes. Output: one JSON object
// with the accounting message by message; -samples DIR adds the raw sends and deliveries.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

type config struct {
	system, target, channel, settings, samples string
	rate                                       float64
	publishers, subscribers, payloadBytes      int
	warmup, duration, drain                    time.Duration
}

// Publisher publishes one payload. A Subscriber is subscribed when opened; Receive reads on its
// own goroutine until ctx ends, stamping each message when it came off the connection.
type Publisher interface {
	Publish(ctx context.Context, payload string) error
	Close()
}

type Subscriber interface {
	Receive(ctx context.Context, out chan<- Delivery)
	Close()
}

// Delivery is one message as a subscriber's connection returned it (Err: the connection failed).
type Delivery struct {
	Payload []byte
	At      int64
	Err     error
}

// forward reads with next until ctx ends or the connection fails, stamping each message as it came
// off the connection; a failure is delivered once, then the reader stops
func forward(ctx context.Context, out chan<- Delivery, next func(context.Context) ([]byte, error)) {
	for {
		payload, err := next(ctx)
		d := Delivery{Payload: payload, At: monotonicNs(), Err: err}
		if err != nil && ctx.Err() != nil {
			return // the run ended it
		}
		select {
		case out <- d:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// receiveBuffer holds what a reader stamped before the accounting took it (the accounting is
// fast; the buffer keeps a slow step from delaying a read, and so a receipt stamp)
const receiveBuffer = 1 << 16

func monotonicNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// payload: {"p":<publisher>,"s":<seq>,"t":<intended ns, 20 wide>,"pad":"xxx"} padded to -payload bytes
func payload(publisher, seq int, intended int64, size int) string {
	head := fmt.Sprintf(`{"p":%d,"s":%d,"t":%20d,"pad":"`, publisher, seq, intended)
	pad := size - len(head) - 2
	if pad < 0 {
		pad = 0
	}
	return head + strings.Repeat("x", pad) + `"}`
}

// parse reads (publisher, seq, intended ns) back; ok false: not one of ours
func parse(p []byte) (int, int, int64, bool) {
	fields := [3]int64{}
	for i, key := range []string{`"p":`, `"s":`, `"t":`} {
		at := strings.Index(string(p), key)
		if at < 0 {
			return 0, 0, 0, false
		}
		j := at + len(key)
		for j < len(p) && p[j] == ' ' {
			j++
		}
		k := j
		for k < len(p) && p[k] >= '0' && p[k] <= '9' {
			k++
		}
		v, err := strconv.ParseInt(string(p[j:k]), 10, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		fields[i] = v
	}
	return int(fields[0]), int(fields[1]), fields[2], true
}

// seen is one subscriber's view of one publisher's sequence: a count per seq
type seen struct {
	counts     []uint8
	maxSeq     int
	reordered  int
	inWindow   int
	duplicates int
}

type subscriberLog struct {
	name       string
	from       []*seen // per publisher
	foreign    int
	error      string
	complete   bool
	deliveries [][2]int32 // intended offset ms from start, delivery latency µs (in-window only)
}

type run struct {
	cfg                           config
	start, windowStart, windowEnd int64
	sent                          [][]int64 // per publisher: intended ns of each seq published OK (-1: failed)
	sends                         [][3]int64
	logMu                         sync.Mutex
	lag, service                  []int64
	publishErrors                 atomic.Int64
	publishersDone                atomic.Bool
	inWindowSent                  atomic.Int64
	received                      atomic.Int64 // in-window deliveries, all subscribers
}

// intendedAt is publish k's intended time: open loop, publisher w at start + (k*P + w) / rate;
// closed loop (-rate 0), now (the next publish goes as soon as the last returned)
func (r *run) intendedAt(worker, k int) int64 {
	if r.cfg.rate <= 0 {
		return max(monotonicNs(), r.start)
	}
	interval := float64(r.cfg.publishers) / r.cfg.rate * 1e9
	offset := float64(worker) / r.cfg.rate * 1e9
	return r.start + int64(offset+float64(k)*interval)
}

func (r *run) publish(ctx context.Context, p Publisher, worker int) {
	for k := 0; ; k++ {
		intended := r.intendedAt(worker, k)
		if intended >= r.windowEnd {
			return
		}
		message := payload(worker, k, intended, r.cfg.payloadBytes)
		if wait := intended - monotonicNs(); wait > 0 {
			time.Sleep(time.Duration(wait))
		}
		began := monotonicNs()
		err := p.Publish(ctx, message)
		done := monotonicNs()
		r.logMu.Lock()
		if err != nil {
			r.sent[worker] = append(r.sent[worker], -1)
		} else {
			r.sent[worker] = append(r.sent[worker], intended)
			r.sends = append(r.sends, [3]int64{intended - r.start, began - r.start, done - r.start})
			if intended >= r.windowStart {
				r.lag = append(r.lag, (began-intended)/1000)
				r.service = append(r.service, (done-began)/1000)
			}
		}
		r.logMu.Unlock()
		if err != nil {
			r.publishErrors.Add(1)
			fmt.Fprintln(os.Stderr, "publish:", err)
		} else if intended >= r.windowStart {
			r.inWindowSent.Add(1)
		}
	}
}

func (r *run) subscribe(s Subscriber, log *subscriberLog, deadline int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deliveries := make(chan Delivery, receiveBuffer)
	go s.Receive(ctx, deliveries)
	tick := time.NewTicker(100 * time.Millisecond) // wake to check whether everything arrived
	defer tick.Stop()
	for {
		if monotonicNs() >= deadline {
			return
		}
		if r.publishersDone.Load() && int64(log.inWindow()) >= r.inWindowSent.Load() {
			log.complete = true
			return
		}
		var d Delivery
		select {
		case d = <-deliveries:
		case <-tick.C:
			continue
		}
		if d.Err != nil {
			log.error = d.Err.Error()
			return
		}
		r.note(log, d.Payload, d.At)
	}
}

// note one received message in the subscriber's accounting
func (r *run) note(log *subscriberLog, msg []byte, received int64) {
	publisher, seq, intended, ok := parse(msg)
	if !ok || publisher < 0 || publisher >= len(log.from) || seq < 0 {
		log.foreign++
		return
	}
	from := log.from[publisher]
	for len(from.counts) <= seq {
		from.counts = append(from.counts, 0)
	}
	if from.counts[seq] > 0 {
		from.duplicates++
	} else if seq < from.maxSeq {
		from.reordered++
	}
	if from.counts[seq] < 255 {
		from.counts[seq]++
	}
	if seq > from.maxSeq {
		from.maxSeq = seq
	}
	if from.counts[seq] == 1 && intended >= r.windowStart && intended < r.windowEnd {
		from.inWindow++
		log.deliveries = append(log.deliveries,
			[2]int32{int32((intended - r.start) / 1e6), int32((received - intended) / 1000)})
		r.received.Add(1)
	}
}

func (l *subscriberLog) inWindow() int {
	n := 0
	for _, f := range l.from {
		n += f.inWindow
	}
	return n
}

func percentiles(values []int64) map[string]any {
	out := map[string]any{"count": len(values)}
	if len(values) == 0 {
		return out
	}
	sort.Slice(values, func(i, j int) bool { return values[i] < values[j] })
	at := func(q float64) int64 {
		r := int(q*float64(len(values))+0.999999) - 1 // the nearest-rank percentile
		if r < 0 {
			r = 0
		}
		if r >= len(values) {
			r = len(values) - 1
		}
		return values[r]
	}
	for name, q := range map[string]float64{"p50_us": 0.50, "p99_us": 0.99, "p999_us": 0.999} {
		out[name] = at(q)
	}
	out["max_us"] = values[len(values)-1]
	return out
}

// account sets every subscriber against every publisher's confirmed sends: expected, delivered,
// lost (or not received by the cutoff, for a subscriber still reading when cut off), duplicates
func (r *run) account(logs []*subscriberLog) map[string]any {
	var expected, delivered, lost, cutoff, dups, reordered, foreign, inWindowExpected int
	per := []map[string]any{}
	for _, l := range logs {
		missed := 0
		for w, sent := range r.sent {
			from := l.from[w]
			for seq, intended := range sent {
				if intended < 0 {
					continue
				}
				expected++
				got := seq < len(from.counts) && from.counts[seq] > 0
				if got {
					delivered++
				} else {
					missed++
				}
				if intended >= r.windowStart && intended < r.windowEnd {
					inWindowExpected++
				}
			}
			dups += from.duplicates
			reordered += from.reordered
		}
		foreign += l.foreign
		if l.complete || l.error != "" {
			lost += missed
		} else {
			cutoff += missed
		}
		per = append(per, map[string]any{"subscriber": l.name, "lost": missed, "in_window": l.inWindow(),
			"drain_complete": l.complete, "error": l.error})
	}
	ratio := any(nil)
	if expected > 0 {
		ratio = float64(delivered) / float64(expected)
	}
	return map[string]any{"expected": expected, "delivered": delivered, "lost": lost,
		"not_received_by_cutoff": cutoff, "duplicates": dups, "reordered": reordered, "foreign": foreign,
		"expected_in_window": inWindowExpected, "delivered_ratio": ratio, "per_subscriber": per}
}

func main() {
	var c config
	flag.StringVar(&c.system, "system", "postgres", "postgres (LISTEN/NOTIFY) or redis (SUBSCRIBE/PUBLISH)")
	flag.StringVar(&c.target, "target", "", "a libpq URL (postgres) or host:port (redis)")
	flag.StringVar(&c.channel, "channel", "", "the channel every subscriber listens on")
	flag.Float64Var(&c.rate, "rate", 1000, "offered messages per second, all publishers together (0: closed loop, flat out)")
	flag.IntVar(&c.publishers, "publishers", 4, "publisher connections")
	flag.IntVar(&c.subscribers, "subscribers", 1, "subscriber connections, each gets every message")
	flag.IntVar(&c.payloadBytes, "payload", 64, "bytes per message")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured lead-in")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "the measured window")
	flag.DurationVar(&c.drain, "drain", 10*time.Second, "after the window, at most this long to receive what it published")
	flag.StringVar(&c.settings, "settings", "", "postgres: session settings, name=value,...")
	flag.StringVar(&c.samples, "samples", "", "a directory: sends.bin (int64 intended, began, done ns from the start) and deliveries.bin (int32 intended ms from the start, delivery µs)")
	flag.Parse()
	if err := validate(c); err != nil {
		fmt.Fprintln(os.Stderr, "psload: error:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	var pubs []Publisher
	var subs []Subscriber
	for i := 0; i < c.subscribers; i++ {
		s, err := openSubscriber(ctx, c, i)
		if err != nil {
			fail(err)
		}
		subs = append(subs, s)
	}
	for i := 0; i < c.publishers; i++ {
		p, err := openPublisher(ctx, c, i)
		if err != nil {
			fail(err)
		}
		pubs = append(pubs, p)
	}
	r := &run{cfg: c, sent: make([][]int64, c.publishers)}
	r.start = monotonicNs() + int64(50*time.Millisecond)
	r.windowStart = r.start + c.warmup.Nanoseconds()
	r.windowEnd = r.windowStart + c.duration.Nanoseconds()
	deadline := r.windowEnd + c.drain.Nanoseconds()
	logs := make([]*subscriberLog, c.subscribers)
	var pw, sw sync.WaitGroup
	for i, s := range subs {
		logs[i] = &subscriberLog{name: fmt.Sprintf("s%d", i), from: make([]*seen, c.publishers)}
		for w := range logs[i].from {
			logs[i].from[w] = &seen{maxSeq: -1}
		}
		sw.Add(1)
		go func(s Subscriber, l *subscriberLog) { defer sw.Done(); r.subscribe(s, l, deadline) }(s, logs[i])
	}
	for i, p := range pubs {
		pw.Add(1)
		go func(i int, p Publisher) { defer pw.Done(); r.publish(ctx, p, i) }(i, p)
	}
	pw.Wait()
	r.publishersDone.Store(true)
	sw.Wait()
	finished := monotonicNs()
	for _, p := range pubs {
		p.Close()
	}
	for _, s := range subs {
		s.Close()
	}
	var delivery []int64
	for _, l := range logs {
		for _, d := range l.deliveries {
			delivery = append(delivery, int64(d[1]))
		}
	}
	published, inWindow := 0, r.inWindowSent.Load()
	for _, sent := range r.sent {
		for _, t := range sent {
			if t >= 0 {
				published++
			}
		}
	}
	out := map[string]any{
		"tool": "psload", "system": c.system, "offered_per_s": c.rate, "window_s": c.duration.Seconds(),
		"warmup_s": c.warmup.Seconds(), "publishers": c.publishers, "subscribers": c.subscribers,
		"payload_bytes": c.payloadBytes, "published": published, "published_in_window": inWindow,
		"publish_errors": r.publishErrors.Load(), "published_per_s": float64(inWindow) / c.duration.Seconds(),
		"deliveries_in_window": r.received.Load(),
		"deliveries_per_s": float64(r.received.Load()) / c.duration.Seconds(),
		"drain_s": float64(finished-r.windowEnd) / 1e9, "delivery": percentiles(delivery),
		"schedule_lag": percentiles(r.lag), "publish_service": percentiles(r.service),
		"accounting": r.account(logs),
	}
	if c.samples != "" {
		if err := r.writeSamples(c.samples, logs); err != nil {
			fail(err)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}

func validate(c config) error {
	switch {
	case c.system != "postgres" && c.system != "redis":
		return fmt.Errorf("-system %q: use postgres or redis", c.system)
	case c.target == "" || c.channel == "":
		return errors.New("-target and -channel are required")
	case c.rate < 0 || c.publishers < 1 || c.subscribers < 1 || c.payloadBytes < 1:
		return errors.New("-publishers, -subscribers and -payload must be positive, -rate positive or 0 (closed loop)")
	case c.payloadBytes > 7999 && c.system == "postgres":
		return fmt.Errorf("-payload %d: a NOTIFY payload must be shorter than 8000 bytes", c.payloadBytes)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "psload: error:", err)
	os.Exit(1)
}

func (r *run) writeSamples(dir string, logs []*subscriberLog) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fill func(w *bufio.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if err := fill(w); err != nil {
			f.Close()
			return err
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if err := write("sends.bin", func(w *bufio.Writer) error {
		return binary.Write(w, binary.LittleEndian, r.sends)
	}); err != nil {
		return err
	}
	return write("deliveries.bin", func(w *bufio.Writer) error {
		for _, l := range logs {
			if err := binary.Write(w, binary.LittleEndian, l.deliveries); err != nil {
				return err
			}
		}
		return nil
	})
}

func openPublisher(ctx context.Context, c config, i int) (Publisher, error) {
	if c.system == "redis" {
		return openRedisPublisher(ctx, c, i)
	}
	return openPostgresPublisher(ctx, c, i)
}

func openSubscriber(ctx context.Context, c config, i int) (Subscriber, error) {
	if c.system == "redis" {
		return openRedisSubscriber(ctx, c, i)
	}
	return openPostgresSubscriber(ctx, c, i)
}
