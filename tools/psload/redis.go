package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// redisPublisher: PUBLISH, one per round trip, as the harness's adapter publishes
type redisPublisher struct {
	client  *redis.Client
	channel string
}

func (p *redisPublisher) Publish(ctx context.Context, payload string) error {
	return p.client.Publish(ctx, p.channel, payload).Err()
}

func (p *redisPublisher) Close() { _ = p.client.Close() }

// redisSubscriber: SUBSCRIBE on its own connection; messages read as they arrive
type redisSubscriber struct {
	client *redis.Client
	sub    *redis.PubSub
}

func (s *redisSubscriber) Receive(ctx context.Context, out chan<- Delivery) {
	forward(ctx, out, func(ctx context.Context) ([]byte, error) {
		msg, err := s.sub.ReceiveMessage(ctx)
		if err != nil {
			return nil, err
		}
		return []byte(msg.Payload), nil
	})
}

func (s *redisSubscriber) Close() {
	_ = s.sub.Close()
	_ = s.client.Close()
}

func newRedisClient(c config) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: c.target, PoolSize: 1, MinIdleConns: 1, Protocol: 2})
}

func openRedisPublisher(ctx context.Context, c config, i int) (Publisher, error) {
	client := newRedisClient(c)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("publisher%d: %w", i, err)
	}
	return &redisPublisher{client: client, channel: c.channel}, nil
}

func openRedisSubscriber(ctx context.Context, c config, i int) (Subscriber, error) {
	client := newRedisClient(c)
	sub := client.Subscribe(ctx, c.channel)
	// subscribed once the server confirms it: a message published after it reaches this client
	if _, err := sub.Receive(ctx); err != nil {
		_ = sub.Close()
		_ = client.Close()
		return nil, fmt.Errorf("subscriber%d: %w", i, err)
	}
	return &redisSubscriber{client: client, sub: sub}, nil
}
