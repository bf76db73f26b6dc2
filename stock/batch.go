package stock

import (
	"context"
	"errors"
	"fmt"
)

// GroupCommit turns group commit (group.go) on, the default, or off: every take and path its own
// script call.
func (l *Ledger) GroupCommit(on bool) { l.single = !on }

// BatchStats answers how many take script calls were made, and for how many takes.
func (l *Ledger) BatchStats() (calls, takes int64) { return l.calls.Load(), l.takes.Load() }

// errNotAnswered is the answer of a request whose batch never came back.
var errNotAnswered = errors.New("the batch was not answered")

// takeReq is one buyer's take.
type takeReq struct {
	userID        int64
	path, orderNo string
	loan          string
	answer, left  string
	confirmed     bool // the replicas acknowledged the batch (or the ledger does not wait for them)
	err           error
}

// take runs the take script for one buyer on shard h of the item, with the loan to credit first ("" for
// none), alone or in its shard's batch, and answers the script's answer for this buyer and whether its
// batch is confirmed (wait.go).
func (l *Ledger) take(ctx context.Context, itemID int64, h int, userID int64, path, orderNo, loan string) ([]string, bool, error) {
	w := &waiting[takeReq]{req: takeReq{userID: userID, path: path, orderNo: orderNo, loan: loan}}
	send := func(ctx context.Context, batch []*waiting[takeReq]) { l.takeBatch(ctx, itemID, h, batch) }
	if l.single || !l.known(itemID) {
		send(ctx, []*waiting[takeReq]{w})
	} else {
		if err := l.takeGroups.of(itemID, h).do(ctx, w, send); err != nil {
			return nil, false, fmt.Errorf("take: %w", err)
		}
	}
	r := &w.req
	if r.err != nil {
		return nil, false, r.err
	}
	return []string{r.answer, r.left}, r.confirmed, nil
}

// takeBatch runs the take script once for the batch's buyers, in order, and fills in each one's answer;
// a failed call fails every one of them (and took nothing: the script decides all before it writes).
// When the ledger waits for replicas, one WAIT follows the call for the whole batch (wait.go).
func (l *Ledger) takeBatch(ctx context.Context, itemID int64, h int, batch []*waiting[takeReq]) {
	k := ShardKeys(itemID, h)
	keys := []string{k.Sale, k.Buyers, k.Stream, k.Received, k.Paths}
	args := make([]any, 0, 1+4*len(batch))
	args = append(args, l.now().UnixMilli())
	for _, w := range batch {
		r := &w.req
		r.err = errNotAnswered // until the script answers (a panic on the way leaves it)
		args = append(args, r.userID, r.path, r.orderNo, r.loan)
	}
	l.calls.Add(1)
	l.takes.Add(int64(len(batch)))
	res, confirmed, err := l.runTake(ctx, keys, args)
	if err == nil && len(res) != 2*len(batch) {
		err = fmt.Errorf("%d answers for %d buyers", len(res), len(batch))
	}
	for i, w := range batch {
		r := &w.req
		r.err = nil
		if err != nil {
			r.err = fmt.Errorf("take: %w", err)
			continue
		}
		r.answer, r.left, r.confirmed = res[2*i], res[2*i+1], confirmed
	}
}

// pathReq is one buyer's purchase path to issue.
type pathReq struct {
	userID   int64
	token    string
	anyStock bool // skip the stock check: the caller saw stock in another shard
	answer   string
	err      error
}

// issue runs the path script for one buyer on shard h of the item, alone or in its shard's batch, and
// answers the script's answer for this buyer.
func (l *Ledger) issue(ctx context.Context, itemID int64, h int, userID int64, token string, anyStock bool) (string, error) {
	w := &waiting[pathReq]{req: pathReq{userID: userID, token: token, anyStock: anyStock}}
	send := func(ctx context.Context, batch []*waiting[pathReq]) { l.pathBatch(ctx, itemID, h, batch) }
	if l.single || !l.known(itemID) {
		send(ctx, []*waiting[pathReq]{w})
	} else {
		if err := l.pathGroups.of(itemID, h).do(ctx, w, send); err != nil {
			return "", fmt.Errorf("issue path: %w", err)
		}
	}
	return w.req.answer, w.req.err
}

// pathBatch runs the path script once for the batch's buyers and fills in each one's answer; a failed
// call fails every one of them.
func (l *Ledger) pathBatch(ctx context.Context, itemID int64, h int, batch []*waiting[pathReq]) {
	k := ShardKeys(itemID, h)
	keys := []string{k.Sale, k.Buyers, k.Paths}
	args := make([]any, 0, 2+3*len(batch))
	args = append(args, l.now().UnixMilli(), PathTTL.Milliseconds())
	for _, w := range batch {
		r := &w.req
		r.err = errNotAnswered
		skip := "0"
		if r.anyStock {
			skip = "1"
		}
		args = append(args, r.userID, r.token, skip)
	}
	res, err := pathScript.Run(ctx, l.rdb, keys, args...).StringSlice()
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("%d answers for %d buyers", len(res), len(batch))
	}
	for i, w := range batch {
		w.req.err = nil
		if err != nil {
			w.req.err = fmt.Errorf("issue path: %w", err)
			continue
		}
		w.req.answer = res[i]
	}
}
