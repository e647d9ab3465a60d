package controller

import "runtime/debug"

// deliver calls OnChange for one applied change and recovers a panic in it
// (issue 11 item 6: OnChange reconciles local logs, replicas and
// coordinators; a bug there, on the publisher goroutine, stopped the
// process, and after a restart the same change could panic again). The
// panic is logged with its stack and the image is published anyway: the
// next change is reconciled against it, which is better than serving no
// newer metadata at all.
func (c *Controller) deliver(ch change) {
	defer func() {
		if r := recover(); r != nil {
			c.opts.Logger.Error("controller: panic while applying a metadata change locally; publishing the image anyway",
				"offset", ch.next.Offset, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	c.opts.OnChange(ch.prev, ch.next)
}
