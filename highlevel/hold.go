package highlevel

// A holder is what a graph holds while it may run: the Memory its work
// names and the Modules whose kernels it launches. A capture holds each
// once (capture.keep) and hands them to its Graph, and each GraphExec
// holds them again; Free and Close of a held object are left to its last
// unhold, which gives it back once the work queued until then has run.
type holder interface {
	hold()
	unhold()
}

// unholdAll ends a hold on each of held.
func unholdAll(held []holder) {
	for _, h := range held {
		h.unhold()
	}
}
