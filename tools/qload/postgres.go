package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// pgQueue runs the adapter's own statements, each autocommitted as the adapter runs them.
type pgQueue struct {
	conn *pgx.Conn
	cfg  config
	name string
}

func openPostgres(ctx context.Context, c config, name string) (Queue, error) {
	cc, err := pgx.ParseConfig(c.target)
	if err != nil {
		return nil, fmt.Errorf("-target: %w", err)
	}
	for _, setting := range strings.Split(c.settings, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(setting), "="); ok {
			cc.RuntimeParams[k] = v
		}
	}
	cc.RuntimeParams["application_name"] = "qload " + name
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	return &pgQueue{conn: conn, cfg: c, name: name}, nil
}

func (q *pgQueue) Enqueue(ctx context.Context, payload []byte) error {
	_, err := q.conn.Exec(ctx, q.cfg.enqueueSQL, payload)
	return err
}

func (q *pgQueue) Claim(ctx context.Context, batch int) ([]Claimed, error) {
	var args []any
	for _, p := range strings.Split(q.cfg.claimParams, ",") {
		switch strings.TrimSpace(p) {
		case "batch":
			args = append(args, batch)
		case "consumer":
			args = append(args, q.name)
		case "":
		default:
			return nil, fmt.Errorf("-claim-params: unknown parameter %q (batch, consumer)", p)
		}
	}
	rows, err := q.conn.Query(ctx, q.cfg.claimSQL, args...)
	if err != nil {
		return nil, err
	}
	var out []Claimed
	for rows.Next() {
		var c Claimed
		if err := rows.Scan(&c.ID, &c.Payload); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (q *pgQueue) Ack(ctx context.Context, claimed []Claimed) error {
	if q.cfg.ackSQL == "" {
		return nil // delete-mode: the claim removed them
	}
	ids := make([]int64, len(claimed))
	for i, c := range claimed {
		ids[i] = c.ID
	}
	_, err := q.conn.Exec(ctx, q.cfg.ackSQL, ids)
	return err
}

func (q *pgQueue) Close() { _ = q.conn.Close(context.Background()) }
