package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"time"
)

// Churn mode (-churn): the co-location study's queue churn. Each of -consumers workers runs whole
// jobs on an open-loop Poisson schedule (the workers' schedules together offer -rate jobs/s, as
// pgbench -R schedules its clients): at a job's intended start it enqueues one message, claims one
// (-batch) and acks what it claimed, so a queue with a backlog keeps its depth, as the Postgres
// churn's pgbench script does in one transaction. A job's latency runs from its intended start to
// its ack's return, so a worker that falls behind shows it (pgbench's latency under -R alike).
// An empty claim is an error: the caller's backlog keeps the queue from ever being empty.

func (r *run) churn(ctx context.Context, q Queue, worker int) {
	rng := rand.New(rand.NewSource(r.cfg.seed*1000 + int64(worker)))
	meanGapNs := float64(r.cfg.consumers) / r.cfg.rate * 1e9
	intended := r.start + int64(rng.ExpFloat64()*meanGapNs)
	for k := 0; intended < r.windowEnd; k++ {
		message := payload(rng, fmt.Sprintf("c%d-%d", worker, k), intended, r.cfg.payloadBytes)
		if wait := intended - monotonicNs(); wait > 0 {
			time.Sleep(time.Duration(wait))
		}
		began := monotonicNs()
		err := r.oneJob(ctx, q, message)
		done := monotonicNs()
		r.sentAll.Add(1)
		if err != nil {
			r.errors.Add(1)
			fmt.Fprintln(os.Stderr, "churn:", err)
		} else {
			r.claimedAll.Add(1)
			r.logJob(intended, began, done)
			if intended >= r.windowStart {
				r.measured.Add(1)
				r.endToEnd.add((done - intended) / 1000)
				r.lag.add((began - intended) / 1000)
			}
		}
		intended += int64(rng.ExpFloat64() * meanGapNs)
	}
}

// oneJob is one job of the churn: enqueue, claim, ack.
func (r *run) oneJob(ctx context.Context, q Queue, message []byte) error {
	if err := q.Enqueue(ctx, message); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	claimed, err := q.Claim(ctx, r.cfg.batch)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if len(claimed) == 0 {
		return fmt.Errorf("claim: the queue was empty (the churn needs a backlog)")
	}
	if err := q.Ack(ctx, claimed); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	return nil
}

func (r *run) logJob(intended, began, done int64) {
	if r.cfg.samples == "" {
		return
	}
	r.logMu.Lock()
	r.jobs = append(r.jobs, [3]int64{intended - r.start, began - r.start, done - r.start})
	r.logMu.Unlock()
}
