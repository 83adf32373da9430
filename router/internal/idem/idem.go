package idem

import "strconv"

// End is the key of the terminal event (task.result, task.error,
// task.cancel, task.timeout) that ends an attempt:
// "clutch.end/<task>/<attempt>". The store lets one end of an attempt in.
func End(task string, attempt int) string {
	return "clutch.end/" + task + "/" + strconv.Itoa(attempt)
}

// Dispatch is the key of the x.clutch.task.dispatch event that sends an
// attempt to the process hosting its agent:
// "clutch.dispatch/<task>/<attempt>".
func Dispatch(task string, attempt int) string {
	return "clutch.dispatch/" + Attempt(task, attempt)
}

// Claim is the key of the x.clutch.task.claim event by which a process
// takes an attempt dispatched to it: "clutch.claim/<task>/<attempt>".
// The store lets one claim in, so one process runs the attempt.
func Claim(task string, attempt int) string {
	return "clutch.claim/" + Attempt(task, attempt)
}

// Done is the key of the x.clutch.task.done event that carries an
// attempt's outcome back to the routing process:
// "clutch.done/<task>/<attempt>".
func Done(task string, attempt int) string {
	return "clutch.done/" + Attempt(task, attempt)
}

// Owner is the key of the x.clutch.task.owner event stored with a task's
// request, naming the node that routes it: "clutch.owner/<task>".
func Owner(task string) string {
	return "clutch.owner/" + task
}

// Adopt is the key of the x.clutch.task.owner event by which a survivor
// adopts a task of the dead node: "clutch.adopt/<task>/<node>". The
// store lets one in, so one survivor adopts the task.
func Adopt(task, node string) string {
	return "clutch.adopt/" + task + "/" + node
}

// Attempt names one attempt of a task, "<task>/<attempt>": the tail of
// the per-attempt keys above, and the key of an attempt in the maps of
// the processes that wait for it.
func Attempt(task string, attempt int) string {
	return task + "/" + strconv.Itoa(attempt)
}
