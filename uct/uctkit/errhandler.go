package uctkit

import (
	"sync"

	"github.com/ucgo/ucgo/uct"
)

// ErrorHandlerSlot holds an iface's error handler; transports embed it.
type ErrorHandlerSlot struct {
	mu  sync.Mutex
	h   uct.ErrorHandler
	arg any
}

// Set installs h with arg; nil restores uct.DefaultErrorHandler.
func (s *ErrorHandlerSlot) Set(h uct.ErrorHandler, arg any) {
	s.mu.Lock()
	s.h, s.arg = h, arg
	s.mu.Unlock()
}

// Call runs the installed handler (or the default one).
func (s *ErrorHandlerSlot) Call(ep uct.Endpoint, err error) {
	s.mu.Lock()
	h, arg := s.h, s.arg
	s.mu.Unlock()
	if h == nil {
		h = uct.DefaultErrorHandler
	}
	h(arg, ep, err)
}
