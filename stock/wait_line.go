package stock

import "context"

// Joins of the waiting room are promises too (issue 36): a place given by a master that dies before its
// replica has it is lost with it, and the shopper, told they are in line, is out of it. So a join waits
// for the replicas as a take batch does (runWaited: the script and WAIT on one connection), one WAIT per
// join: joins are not batched, and come spread over the room's opening rather than in one burst.

// runJoin runs the join script, and WAIT on the same connection when the ledger waits for replicas.
// confirmed is false when the replicas did not acknowledge the join in time: its place is on the master,
// not known to be on a replica.
func (l *Line) runJoin(ctx context.Context, keys []string, args []any) (res []string, confirmed bool, err error) {
	l.ledger.reaskReplicas(ctx)
	if l.ledger.waitsFor() <= 0 {
		res, err = queueScript.Run(ctx, l.rdb, keys, args...).StringSlice()
		return res, true, err
	}
	cmd, acked, err := l.ledger.runWaited(ctx, queueScript, keys, args)
	if err != nil {
		return nil, false, err
	}
	res, err = cmd.StringSlice()
	return res, acked, err
}
