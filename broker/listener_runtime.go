package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// Listeners added and removed at runtime, as Kafka 4.4's
// DynamicListenerConfig.reconfigure: when the per-broker dynamic configs
// of this node (the BROKER resource of its id) change listeners, the node
// reconciles the client listeners it serves against them by name: a name
// no longer listed is closed with its connections, a new name is bound
// with its security (listener.name.<l>.* from the same resource over the
// static settings, config.RuntimeListenerSecurity) and accepts at once. A
// listener that keeps its name keeps its socket, even when the stored
// value gives it another address, as in Kafka. The registration is not
// changed: Kafka 4.4 in KRaft mode never re-registers a broker for a
// listener change (advertised.listeners is read-only, and a runtime
// listener is not advertised even after a restart; kafka-ref, session 33).
// At start the static listeners are bound first and the stored ones are
// reconciled once the metadata image has caught up, before the node
// serves, as Kafka's DynamicConfigPublisher applies them after its
// metadata catch-up: a change survives restarts.

// listenerConfigsChanged tells the listener reconciler that this node's
// per-broker dynamic configs changed (controller OnChange: no IO here).
func (n *Node) listenerConfigsChanged(prev, next *controller.Image) {
	id := strconv.Itoa(int(n.cfg.NodeID))
	var before map[string]string
	if prev != nil {
		before = prev.BrokerConfigs[id]
	}
	if next == nil || maps.Equal(before, next.BrokerConfigs[id]) {
		return
	}
	select {
	case n.listenerSync <- struct{}{}:
	default:
	}
}

// runListenerSync reconciles the listeners after each change of this
// node's dynamic configs until ctx ends.
func (n *Node) runListenerSync(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.listenerSync:
			n.reconcileListeners()
		}
	}
}

// reconcileListeners binds the listeners the node's effective listeners
// name and it does not serve, and closes the ones it serves that they no
// longer name. Failures are logged; the next change retries.
// REQUIRES: called from one goroutine at a time (start, then
// runListenerSync).
func (n *Node) reconcileListeners() {
	defer n.listenerReconciles.Add(1)
	img := n.ctrl.Image()
	if img == nil {
		return
	}
	dynamic := img.BrokerConfigs[strconv.Itoa(int(n.cfg.NodeID))]
	want, protocols, err := n.cfg.EffectiveListeners(dynamic)
	if err != nil {
		n.logger.Error("dynamic listeners: a stored value does not parse; using the static one", "err", err)
	}
	for _, l := range n.srv.Listeners() {
		if slices.ContainsFunc(want, sameListenerName(l.Name)) {
			continue
		}
		if n.srv.RemoveListener(l.Name) {
			n.logger.Info("listener removed (dynamic broker config); its connections are closed", "listener", l.Name)
		} else {
			n.logger.Warn("dynamic listeners: listener is shared with the metadata quorum and stays", "listener", l.Name)
		}
	}
	served := n.srv.Listeners()
	for _, l := range want {
		if n.cfg.IsControllerListener(l.Name) {
			continue
		}
		if i := slices.IndexFunc(served, func(s config.Listener) bool { return strings.EqualFold(s.Name, l.Name) }); i >= 0 {
			if s := served[i]; (s.Host != l.Host || s.Port != l.Port) && n.listenerMoved[l.Name] != l.String() {
				n.logger.Warn("dynamic listeners: a listener that keeps its name keeps its address until it is removed or the node restarts (as Kafka)",
					"listener", l.Name, "serving", s.String(), "stored", l.String())
				n.listenerMoved[l.Name] = l.String()
			}
			continue
		}
		sec, proto, err := n.runtimeListenerSecurity(l, protocols, dynamic)
		if err != nil {
			n.logger.Error("dynamic listeners: cannot add listener", "listener", l.Name, "err", err)
			continue
		}
		addr, err := n.srv.AddListener(l, sec)
		if err != nil {
			n.logger.Error("dynamic listeners: cannot add listener", "listener", l.Name, "err", err)
			continue
		}
		n.logger.Info("listener added (dynamic broker config)", "listener", l.Name, "protocol", proto, "addr", addr.String())
	}
}

func sameListenerName(name string) func(config.Listener) bool {
	return func(l config.Listener) bool { return strings.EqualFold(l.Name, name) }
}

// runtimeListenerSecurity builds the security of listener l added at
// runtime: its protocol from protocols, its settings from the static
// configuration and dynamic; nil for PLAINTEXT.
func (n *Node) runtimeListenerSecurity(l config.Listener, protocols, dynamic map[string]string) (*ListenerSecurity, string, error) {
	proto, ok := protocols[strings.ToUpper(l.Name)]
	if !ok {
		return nil, "", fmt.Errorf("no security protocol defined for listener %s", l.Name)
	}
	ls, err := n.cfg.RuntimeListenerSecurity(l.Name, proto, dynamic)
	if err != nil {
		return nil, proto, err
	}
	sec, err := n.secBuilder.build(l.Name, ls)
	return sec, proto, err
}

// validateNewListeners checks, before a change is stored, that each
// listener it adds can be served (handlers.Deps.ValidateNewListeners):
// its security settings resolve and its keystore and truststore load, and
// its address can be bound (unless a listener the change removes holds
// it). dynamic are the node's per-broker configs after the change.
func (n *Node) validateNewListeners(added, removed []config.Listener, protocols, dynamic map[string]string) error {
	if n.srv == nil || n.secBuilder == nil {
		return errors.New("this node serves no client listeners")
	}
	freed := map[int]bool{}
	for _, r := range removed {
		if a, ok := n.srv.boundAddr(r.Name).(*net.TCPAddr); ok {
			freed[a.Port] = true
		}
	}
	for _, l := range added {
		if n.cfg.IsControllerListener(l.Name) {
			continue
		}
		if _, _, err := n.runtimeListenerSecurity(l, protocols, dynamic); err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
		if l.Port == 0 || freed[l.Port] {
			continue
		}
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			return fmt.Errorf("listener %s cannot bind %s: %w", l.Name, l.Addr(), err)
		}
		ln.Close()
	}
	return nil
}

// currentSecurity is the security of every listener served, static and
// added at runtime, by name (the periodic TLS and key set reloads, and
// dynamic keystore updates, security_reload.go).
func (n *Node) currentSecurity() map[string]*ListenerSecurity {
	out := maps.Clone(n.security)
	if out == nil {
		out = map[string]*ListenerSecurity{}
	}
	if n.srv != nil {
		for name, sec := range n.srv.listenerSecurities() {
			out[name] = sec
		}
	}
	return out
}
