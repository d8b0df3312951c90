// Package uctkit holds the helpers a transport implementation embeds to
// meet the uct contract: ErrorHandlerSlot (Iface.SetErrorHandler and the
// default handler), Notifier (Iface.Notify) and DeviceWatchers
// (Iface.WatchDevice). Users of uct never need it; transports
// (transport/shm, transport/rc) import it.
package uctkit
