package ucp

// laneFault: one lane of ep broke with err (lock held). Until endpoints
// can move to another lane, any lane fault fails the endpoint.
func (w *Worker) laneFault(ep *Endpoint, li int, err error) {
	_ = li
	w.failEP(ep, err)
}

// laneUp: lane li of ep, which had failed, is healthy again (lock held).
// Until endpoints can move between lanes there is nothing to do.
func (w *Worker) laneUp(ep *Endpoint, li int) {}
