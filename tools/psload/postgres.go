package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

func connectPostgres(ctx context.Context, c config, name string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(c.target)
	if err != nil {
		return nil, fmt.Errorf("-target: %w", err)
	}
	for _, setting := range strings.Split(c.settings, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(setting), "="); ok {
			cc.RuntimeParams[k] = v
		}
	}
	cc.RuntimeParams["application_name"] = "psload " + name
	return pgx.ConnectConfig(ctx, cc)
}

// pgPublisher: SELECT pg_notify(channel, payload), autocommitted (one publish, one transaction),
// as the harness's adapter publishes
type pgPublisher struct {
	conn    *pgx.Conn
	channel string
}

func (p *pgPublisher) Publish(ctx context.Context, payload string) error {
	_, err := p.conn.Exec(ctx, "SELECT pg_notify($1, $2)", p.channel, payload)
	return err
}

func (p *pgPublisher) Close() { _ = p.conn.Close(context.Background()) }

// pgSubscriber: LISTEN on its own connection, notifications read as they arrive
type pgSubscriber struct{ conn *pgx.Conn }

func (s *pgSubscriber) Receive(ctx context.Context, out chan<- Delivery) {
	forward(ctx, out, func(ctx context.Context) ([]byte, error) {
		n, err := s.conn.WaitForNotification(ctx)
		if err != nil {
			return nil, err
		}
		return []byte(n.Payload), nil
	})
}

func (s *pgSubscriber) Close() { _ = s.conn.Close(context.Background()) }

func openPostgresPublisher(ctx context.Context, c config, i int) (Publisher, error) {
	conn, err := connectPostgres(ctx, c, fmt.Sprintf("publisher%d", i))
	if err != nil {
		return nil, err
	}
	return &pgPublisher{conn: conn, channel: c.channel}, nil
}

func openPostgresSubscriber(ctx context.Context, c config, i int) (Subscriber, error) {
	conn, err := connectPostgres(ctx, c, fmt.Sprintf("subscriber%d", i))
	if err != nil {
		return nil, err
	}
	// subscribed once LISTEN returns: a notification committed after it reaches this session
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c.channel}.Sanitize()); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	return &pgSubscriber{conn: conn}, nil
}
