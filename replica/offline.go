package replica

import "github.com/samsa-broker/samsa/storage"

// StopOffline stops hosting partitions whose logs went offline with their
// log directory (storage.Manager.TakeDirOffline, KIP-858): they leave the
// hosted set, their waiters wake, and the fetcher of their leader drops
// them. They are not hosted again: Apply hosts a partition only when its
// log is open, and storage never reopens an offline one before a restart.
func (m *Manager) StopOffline(tps []storage.TopicPartition) {
	var stopped []*Partition
	m.mu.Lock()
	for _, tp := range tps {
		if p, ok := m.mu.partitions[tp]; ok {
			delete(m.mu.partitions, tp)
			stopped = append(stopped, p)
		}
	}
	m.mu.Unlock()
	for _, p := range stopped {
		p.stop()
	}
	m.wakeReconcile()
}
