package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
	"golang.org/x/sys/unix"
)

// sqliteQueue is the embedded WAL queue in a compiled program, as the SQLite source study ran it
// (Go, autocommit): the harness adapter's own statements and PRAGMAs, one connection per file
// ("shard"), the adapter's shard dealing and its busy handling — busy_timeout 0 and a retry loop
// whose waits grow 0.1 ms -> 5 ms within a 5 s budget — so only the language around the engine
// differs. Built against the system's libsqlite3 (-tags libsqlite3): the library Python links.
type sqliteQueue struct {
	conns     []*sql.Conn
	dbs       []*sql.DB
	stmts     []statements // per file, prepared once (Python's sqlite3 caches its statements too)
	cfg       config
	name      string
	offset    int // this worker's first shard to claim from and to enqueue into
	nextShard int
}

type statements struct{ enqueue, claim, ack *sql.Stmt }

var busyDelays = []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond}

const busyBudget = 5 * time.Second

func openSQLite(ctx context.Context, c config, name string, worker int) (Queue, error) {
	q := &sqliteQueue{cfg: c, name: name, offset: worker % len(c.files), nextShard: worker % len(c.files)}
	for _, path := range c.files {
		db, err := sql.Open("sqlite3", "file:"+path)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		for _, setting := range strings.Split(c.settings, ",") {
			if k, v, ok := strings.Cut(strings.TrimSpace(setting), "="); ok {
				if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA %s = %s", k, v)); err != nil {
					return nil, fmt.Errorf("PRAGMA %s = %s: %w", k, v, err)
				}
			}
		}
		var st statements
		for _, p := range []struct {
			into **sql.Stmt
			text string
		}{{&st.enqueue, c.enqueueSQL}, {&st.claim, c.claimSQL}, {&st.ack, c.ackSQL}} {
			if *p.into, err = conn.PrepareContext(ctx, p.text); err != nil {
				return nil, fmt.Errorf("prepare %q: %w", p.text, err)
			}
		}
		q.dbs, q.conns, q.stmts = append(q.dbs, db), append(q.conns, conn), append(q.stmts, st)
	}
	return q, nil
}

// sqliteVersion is the library qload linked (the system's, as Python's sqlite3 uses)
func sqliteVersion() string {
	v, _, _ := sqlite3.Version()
	return v
}

func isBusy(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && (e.Code == sqlite3.ErrBusy || e.Code == sqlite3.ErrLocked)
}

// retry runs call again while SQLite answers BUSY, as the adapter's BusyWaiter does.
func retry(call func() error) error {
	started := time.Now()
	for attempt := 0; ; attempt++ {
		err := call()
		if err == nil || !isBusy(err) {
			return err
		}
		if time.Since(started) >= busyBudget {
			return fmt.Errorf("database is locked (busy budget %v spent): %w", busyBudget, err)
		}
		busyWaits.Add(1)
		slept := time.Now()
		sleepExactly(busyDelays[min(attempt, len(busyDelays)-1)])
		busyWaitNs.Add(int64(time.Since(slept)))
	}
}

// sleepExactly waits d in the kernel (nanosleep), as Python's time.sleep does: the Go runtime's
// timers may round a sub-millisecond sleep up to about a millisecond while the process is idle.
func sleepExactly(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// args binds a statement's parameters by name, in the order its flag lists them.
func (q *sqliteQueue) args(names string, values map[string]any) ([]any, error) {
	var out []any
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		v, ok := values[n]
		if !ok {
			return nil, fmt.Errorf("unknown parameter %q (payload, now, consumer, batch, id)", n)
		}
		out = append(out, v)
	}
	return out, nil
}

func (q *sqliteQueue) Enqueue(ctx context.Context, payload []byte) error {
	shard := q.nextShard
	q.nextShard = (shard + 1) % len(q.conns)
	args, err := q.args(q.cfg.enqueueParams, map[string]any{"payload": payload, "now": time.Now().UnixNano()})
	if err != nil {
		return err
	}
	return retry(func() error { _, err := q.stmts[shard].enqueue.ExecContext(ctx, args...); return err })
}

// Claim tries the files from this worker's own first; the first non-empty claim is the answer.
func (q *sqliteQueue) Claim(ctx context.Context, batch int) ([]Claimed, error) {
	for step := range q.conns {
		shard := (q.offset + step) % len(q.conns)
		var out []Claimed
		err := retry(func() error {
			out = out[:0]
			args, err := q.args(q.cfg.claimParams, map[string]any{
				"consumer": q.name, "now": time.Now().UnixNano(), "batch": batch})
			if err != nil {
				return err
			}
			rows, err := q.stmts[shard].claim.QueryContext(ctx, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var rowid int64
				var payload []byte
				var attempts int64
				if err := rows.Scan(&rowid, &payload, &attempts); err != nil {
					return err
				}
				out = append(out, Claimed{ID: rowid*int64(len(q.conns)) + int64(shard), Payload: payload})
			}
			return rows.Err()
		})
		if err != nil || len(out) > 0 {
			return out, err
		}
	}
	return nil, nil
}

// Ack deletes per file: one row autocommits, several share one BEGIN IMMEDIATE transaction.
func (q *sqliteQueue) Ack(ctx context.Context, claimed []Claimed) error {
	byShard := map[int][]int64{}
	for _, c := range claimed {
		shard := int(c.ID % int64(len(q.conns)))
		byShard[shard] = append(byShard[shard], c.ID/int64(len(q.conns)))
	}
	for shard, rowids := range byShard {
		err := retry(func() error { return q.ackRows(ctx, q.conns[shard], q.stmts[shard].ack, rowids) })
		if err != nil {
			return err
		}
	}
	return nil
}

func (q *sqliteQueue) ackRows(ctx context.Context, conn *sql.Conn, ack *sql.Stmt, rowids []int64) error {
	exec := func(rowid int64) error {
		args, err := q.args(q.cfg.ackParams, map[string]any{"id": rowid, "consumer": q.name})
		if err != nil {
			return err
		}
		_, err = ack.ExecContext(ctx, args...)
		return err
	}
	if len(rowids) == 1 {
		return exec(rowids[0])
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	for _, rowid := range rowids {
		if err := exec(rowid); err != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			return err
		}
	}
	_, err := conn.ExecContext(ctx, "COMMIT")
	if err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
	}
	return err
}

func (q *sqliteQueue) Close() {
	for _, st := range q.stmts {
		_, _, _ = st.enqueue.Close(), st.claim.Close(), st.ack.Close()
	}
	for i := range q.conns {
		_ = q.conns[i].Close()
		_ = q.dbs[i].Close()
	}
}
