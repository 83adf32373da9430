package router

// Cancel cancels the running task taskID and its subtree, as its
// Handle.Cancel would, with reason in the task.cancel event. It is for a
// surface that has authenticated and authorised the caller itself (the
// gateway); a task.cancel envelope from outside goes through Admit. It
// returns the task's handle, or ErrUnknownTask when no task with that id
// runs in this router (it has ended, or runs in another process).
func (r *Router) Cancel(taskID, reason string) (*Handle, error) {
	r.mu.Lock()
	ts := r.tasks[taskID]
	r.mu.Unlock()
	if ts == nil {
		return nil, wrap(ErrUnknownTask, "no running task "+taskID, nil)
	}
	ts.handle.Cancel(reason)
	return &ts.handle, nil
}
