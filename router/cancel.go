package router

import (
	"context"
	"errors"
)

// Cancel cancels the running task taskID and its subtree, as its
// Handle.Cancel would, with reason in the task.cancel event. It is for a
// surface that has authenticated and authorised the caller itself (the
// gateway); a task.cancel envelope from outside goes through Admit. It
// returns the task's handle, or ErrUnknownTask when no task with that id
// runs in this router (it has ended, or runs in another process). A task
// that waits here for an answer (Task.Ask) is ended with its task.cancel
// at once, and the handle returned has that outcome.
func (r *Router) Cancel(taskID, reason string) (*Handle, error) {
	r.mu.Lock()
	ts := r.tasks[taskID]
	_, asking := r.asking[taskID]
	r.mu.Unlock()
	if (ts == nil || ts.parked()) && asking { // its run stopped to ask; it waits
		if reason == "" {
			reason = "cancelled by the caller"
		}
		h, err := r.cancelWaiting(context.Background(), taskID, reason)
		switch {
		case errors.Is(err, ErrNotWaiting) || errors.Is(err, ErrTaskEnded):
			return nil, wrap(ErrUnknownTask, "no running task "+taskID, err)
		case errors.Is(err, ErrAnswered): // answered meanwhile: it runs again
			r.mu.Lock()
			ts = r.tasks[taskID]
			r.mu.Unlock()
		default:
			return h, err
		}
	}
	if ts == nil {
		return nil, wrap(ErrUnknownTask, "no running task "+taskID, nil)
	}
	ts.handle.Cancel(reason)
	return &ts.handle, nil
}
