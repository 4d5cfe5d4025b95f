package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// redisQueue is the reliable queue: LPUSH; LMOVE into the consumer's processing list; LREM on
// ack — with -pipeline > 1, a claim sends -batch LMOVEs and an ack -batch LREMs per round trip.
type redisQueue struct {
	client     *redis.Client
	key        string
	processing string
	pipeline   int
}

func openRedis(ctx context.Context, c config, name string) (Queue, error) {
	client := redis.NewClient(&redis.Options{Addr: c.target, PoolSize: 1, MinIdleConns: 1, Protocol: 2})
	if err := client.Ping(ctx).Err(); err != nil {
		return nil, err
	}
	return &redisQueue{client: client, key: c.key, processing: c.key + ":processing:" + name, pipeline: c.pipeline}, nil
}

func (q *redisQueue) Enqueue(ctx context.Context, payload []byte) error {
	return q.client.LPush(ctx, q.key, payload).Err()
}

func (q *redisQueue) Claim(ctx context.Context, batch int) ([]Claimed, error) {
	if q.pipeline == 1 || batch == 1 {
		var out []Claimed
		for i := 0; i < batch; i++ {
			v, err := q.client.LMove(ctx, q.key, q.processing, "RIGHT", "LEFT").Bytes()
			if err == redis.Nil {
				break
			} else if err != nil {
				return out, err
			}
			out = append(out, Claimed{Payload: v})
		}
		return out, nil
	}
	pipe := q.client.Pipeline()
	cmds := make([]*redis.StringCmd, batch)
	for i := range cmds {
		cmds[i] = pipe.LMove(ctx, q.key, q.processing, "RIGHT", "LEFT")
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	var out []Claimed
	for _, cmd := range cmds {
		if v, err := cmd.Bytes(); err == nil {
			out = append(out, Claimed{Payload: v})
		}
	}
	return out, nil
}

func (q *redisQueue) Ack(ctx context.Context, claimed []Claimed) error {
	if q.pipeline == 1 || len(claimed) == 1 {
		for _, c := range claimed {
			if err := q.client.LRem(ctx, q.processing, 1, c.Payload).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	pipe := q.client.Pipeline()
	for _, c := range claimed {
		pipe.LRem(ctx, q.processing, 1, c.Payload)
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (q *redisQueue) Close() { _ = q.client.Close() }
