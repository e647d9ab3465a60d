package handlers

import "github.com/twmb/franz-go/pkg/kmsg"

// Table is the dispatch table: one row per API we serve, with the version
// range we support. ApiVersions is answered from this table, so an API is
// advertised exactly when it has a handler here.
func Table() []Entry {
	return []Entry{
		{Key: int16(kmsg.Produce), MinVersion: 3, MaxVersion: 13, Handle: handleProduce},
		{Key: int16(kmsg.Fetch), MinVersion: 4, MaxVersion: 18, Handle: handleFetch},
		{Key: int16(kmsg.ListOffsets), MinVersion: 1, MaxVersion: 11, Handle: handleListOffsets},
		{Key: int16(kmsg.Metadata), MinVersion: 0, MaxVersion: 13, Handle: handleMetadata},
		{Key: int16(kmsg.ApiVersions), MinVersion: 0, MaxVersion: 5, Handle: handleApiVersions},
		// SASL: answered by the connection on SASL listeners (broker/sasl.go)
		{Key: int16(kmsg.SASLHandshake), MinVersion: 0, MaxVersion: 1, Handle: handleSaslHandshake},
		{Key: int16(kmsg.SASLAuthenticate), MinVersion: 0, MaxVersion: 2, Handle: handleSaslAuthenticate},
		{Key: int16(kmsg.DescribeUserSCRAMCredentials), MinVersion: 0, MaxVersion: 0, Handle: handleDescribeUserScramCredentials},
		{Key: int16(kmsg.AlterUserSCRAMCredentials), MinVersion: 0, MaxVersion: 0, Handle: handleAlterUserScramCredentials, Forward: true},
		// delegation tokens (KIP-48): see 38_create_delegation_token.go and broker/delegation_tokens.go
		{Key: int16(kmsg.CreateDelegationToken), MinVersion: 1, MaxVersion: 3, Handle: handleCreateDelegationToken, Forward: true, AnswerLocally: createTokenRefused},
		{Key: int16(kmsg.RenewDelegationToken), MinVersion: 1, MaxVersion: 2, Handle: handleRenewDelegationToken, Forward: true, AnswerLocally: tokenRequestRefused},
		{Key: int16(kmsg.ExpireDelegationToken), MinVersion: 1, MaxVersion: 2, Handle: handleExpireDelegationToken, Forward: true, AnswerLocally: tokenRequestRefused},
		{Key: int16(kmsg.DescribeDelegationToken), MinVersion: 1, MaxVersion: 3, Handle: handleDescribeDelegationToken},
		// client quotas: see 49_alter_client_quotas.go and broker/quota
		{Key: int16(kmsg.DescribeClientQuotas), MinVersion: 0, MaxVersion: 1, Handle: handleDescribeClientQuotas},
		{Key: int16(kmsg.AlterClientQuotas), MinVersion: 0, MaxVersion: 1, Handle: handleAlterClientQuotas, Forward: true},
		{Key: int16(kmsg.OffsetForLeaderEpoch), MinVersion: 0, MaxVersion: 4, Handle: handleOffsetForLeaderEpoch},
		{Key: int16(kmsg.DeleteRecords), MinVersion: 0, MaxVersion: 2, Handle: handleDeleteRecords},
		{Key: int16(kmsg.InitProducerID), MinVersion: 0, MaxVersion: 5, Handle: handleInitProducerID},
		// transactions: see txn_deps.go and coordinator/txn
		{Key: int16(kmsg.AddPartitionsToTxn), MinVersion: 0, MaxVersion: 5, Handle: handleAddPartitionsToTxn},
		{Key: int16(kmsg.AddOffsetsToTxn), MinVersion: 0, MaxVersion: 4, Handle: handleAddOffsetsToTxn},
		{Key: int16(kmsg.EndTxn), MinVersion: 0, MaxVersion: 5, Handle: handleEndTxn},
		{Key: int16(kmsg.WriteTxnMarkers), MinVersion: 0, MaxVersion: 2, Handle: handleWriteTxnMarkers},
		{Key: int16(kmsg.TxnOffsetCommit), MinVersion: 0, MaxVersion: 6, Handle: handleTxnOffsetCommit},
		{Key: int16(kmsg.DescribeProducers), MinVersion: 0, MaxVersion: 0, Handle: handleDescribeProducers},
		{Key: int16(kmsg.DescribeTransactions), MinVersion: 0, MaxVersion: 0, Handle: handleDescribeTransactions},
		{Key: int16(kmsg.ListTransactions), MinVersion: 0, MaxVersion: 2, Handle: handleListTransactions},
		// share coordinator (KIP-932): see coordinator/sharecoord
		{Key: int16(kmsg.InitializeShareGroupState), MinVersion: 0, MaxVersion: 0, Handle: handleInitializeShareGroupState},
		{Key: int16(kmsg.ReadShareGroupState), MinVersion: 0, MaxVersion: 0, Handle: handleReadShareGroupState},
		{Key: int16(kmsg.WriteShareGroupState), MinVersion: 0, MaxVersion: 1, Handle: handleWriteShareGroupState},
		{Key: int16(kmsg.DeleteShareGroupState), MinVersion: 0, MaxVersion: 0, Handle: handleDeleteShareGroupState},
		{Key: int16(kmsg.ReadShareGroupStateSummary), MinVersion: 0, MaxVersion: 1, Handle: handleReadShareGroupStateSummary},
		// groups: see coordinator/
		{Key: int16(kmsg.OffsetCommit), MinVersion: 0, MaxVersion: 10, Handle: handleOffsetCommit},
		{Key: int16(kmsg.OffsetFetch), MinVersion: 0, MaxVersion: 10, Handle: handleOffsetFetch},
		{Key: int16(kmsg.FindCoordinator), MinVersion: 0, MaxVersion: 6, Handle: handleFindCoordinator},
		{Key: int16(kmsg.JoinGroup), MinVersion: 0, MaxVersion: 9, Handle: handleJoinGroup},
		{Key: int16(kmsg.Heartbeat), MinVersion: 0, MaxVersion: 4, Handle: handleHeartbeat},
		{Key: int16(kmsg.LeaveGroup), MinVersion: 0, MaxVersion: 5, Handle: handleLeaveGroup},
		{Key: int16(kmsg.SyncGroup), MinVersion: 0, MaxVersion: 5, Handle: handleSyncGroup},
		{Key: int16(kmsg.DescribeGroups), MinVersion: 0, MaxVersion: 6, Handle: handleDescribeGroups},
		{Key: int16(kmsg.ListGroups), MinVersion: 0, MaxVersion: 5, Handle: handleListGroups},
		{Key: int16(kmsg.DeleteGroups), MinVersion: 0, MaxVersion: 3, Handle: handleDeleteGroups},
		{Key: int16(kmsg.OffsetDelete), MinVersion: 0, MaxVersion: 0, Handle: handleOffsetDelete},
		{Key: int16(kmsg.ConsumerGroupHeartbeat), MinVersion: 0, MaxVersion: 1, Handle: handleConsumerGroupHeartbeat},
		{Key: int16(kmsg.ConsumerGroupDescribe), MinVersion: 0, MaxVersion: 1, Handle: handleConsumerGroupDescribe},
		{Key: int16(kmsg.StreamsGroupHeartbeat), MinVersion: 0, MaxVersion: 1, Handle: handleStreamsGroupHeartbeat},
		{Key: int16(kmsg.StreamsGroupDescribe), MinVersion: 0, MaxVersion: 1, Handle: handleStreamsGroupDescribe},
		{Key: int16(kmsg.StreamsGroupTopologyDescriptionUpdate), MinVersion: 0, MaxVersion: 0, Handle: handleStreamsGroupTopologyDescriptionUpdate},
		// share groups (KIP-932): see coordinator/share_group*.go
		{Key: int16(kmsg.ShareGroupHeartbeat), MinVersion: 1, MaxVersion: 1, Handle: handleShareGroupHeartbeat},
		{Key: int16(kmsg.ShareGroupDescribe), MinVersion: 1, MaxVersion: 1, Handle: handleShareGroupDescribe},
		{Key: int16(kmsg.DescribeShareGroupOffsets), MinVersion: 0, MaxVersion: 1, Handle: handleDescribeShareGroupOffsets},
		{Key: int16(kmsg.AlterShareGroupOffsets), MinVersion: 0, MaxVersion: 0, Handle: handleAlterShareGroupOffsets},
		{Key: int16(kmsg.DeleteShareGroupOffsets), MinVersion: 0, MaxVersion: 0, Handle: handleDeleteShareGroupOffsets},
		// share groups, partition leaders' side: see broker/share
		{Key: int16(kmsg.ShareFetch), MinVersion: 1, MaxVersion: 2, Handle: handleShareFetch},
		{Key: int16(kmsg.ShareAcknowledge), MinVersion: 1, MaxVersion: 2, Handle: handleShareAcknowledge},
		// admin: see 19_create_topics.go and friends
		{Key: int16(kmsg.CreateTopics), MinVersion: 0, MaxVersion: 7, Handle: handleCreateTopics, Forward: true},
		{Key: int16(kmsg.DeleteTopics), MinVersion: 0, MaxVersion: 6, Handle: handleDeleteTopics, Forward: true},
		{Key: int16(kmsg.CreatePartitions), MinVersion: 0, MaxVersion: 3, Handle: handleCreatePartitions, Forward: true},
		{Key: int16(kmsg.DescribeConfigs), MinVersion: 0, MaxVersion: 4, Handle: handleDescribeConfigs},
		{Key: int16(kmsg.AlterConfigs), MinVersion: 0, MaxVersion: 2, Handle: handleAlterConfigs, Forward: true},
		{Key: int16(kmsg.IncrementalAlterConfigs), MinVersion: 0, MaxVersion: 1, Handle: handleIncrementalAlterConfigs, Forward: true},
		{Key: int16(kmsg.DescribeCluster), MinVersion: 0, MaxVersion: 2, Handle: handleDescribeCluster},
		{Key: int16(kmsg.ListConfigResources), MinVersion: 0, MaxVersion: 1, Handle: handleListConfigResources},
		{Key: int16(kmsg.DescribeTopicPartitions), MinVersion: 0, MaxVersion: 0, Handle: handleDescribeTopicPartitions},
		{Key: int16(kmsg.AlterReplicaLogDirs), MinVersion: 1, MaxVersion: 2, Handle: handleAlterReplicaLogDirs},
		{Key: int16(kmsg.DescribeLogDirs), MinVersion: 0, MaxVersion: 5, Handle: handleDescribeLogDirs},
		{Key: int16(kmsg.DescribeQuorum), MinVersion: 0, MaxVersion: 2, Handle: handleDescribeQuorum, Forward: true},
		{Key: int16(kmsg.UpdateFeatures), MinVersion: 0, MaxVersion: 2, Handle: handleUpdateFeatures, Forward: true},
		{Key: int16(kmsg.AddRaftVoter), MinVersion: 0, MaxVersion: 1, Handle: handleAddRaftVoter, Forward: true},
		{Key: int16(kmsg.RemoveRaftVoter), MinVersion: 0, MaxVersion: 0, Handle: handleRemoveRaftVoter, Forward: true},
		{Key: int16(kmsg.UnregisterBroker), MinVersion: 0, MaxVersion: 0, Handle: handleUnregisterBroker, Forward: true},
		{Key: int16(kmsg.UnregisterController), MinVersion: 0, MaxVersion: 0, Handle: handleUnregisterController, Forward: true},
		{Key: int16(kmsg.ElectLeaders), MinVersion: 0, MaxVersion: 2, Handle: handleElectLeaders, Forward: true},
		{Key: int16(kmsg.AlterPartitionAssignments), MinVersion: 0, MaxVersion: 1, Handle: handleAlterPartitionReassignments, Forward: true},
		{Key: int16(kmsg.ListPartitionReassignments), MinVersion: 0, MaxVersion: 0, Handle: handleListPartitionReassignments},
		// ACLs: see 29_describe_acls.go and authz.go
		{Key: int16(kmsg.DescribeACLs), MinVersion: 1, MaxVersion: 3, Handle: handleDescribeAcls},
		{Key: int16(kmsg.CreateACLs), MinVersion: 1, MaxVersion: 3, Handle: handleCreateAcls, Forward: true},
		{Key: int16(kmsg.DeleteACLs), MinVersion: 1, MaxVersion: 3, Handle: handleDeleteAcls, Forward: true},
		// controller APIs: see 56_alter_partition.go and friends
		{Key: int16(kmsg.AlterPartition), MinVersion: 2, MaxVersion: 3, Handle: handleAlterPartition, ControllerOnly: true},
		{Key: int16(kmsg.BrokerRegistration), MinVersion: 0, MaxVersion: 4, Handle: handleBrokerRegistration, ControllerOnly: true},
		{Key: int16(kmsg.BrokerHeartbeat), MinVersion: 0, MaxVersion: 2, Handle: handleBrokerHeartbeat, ControllerOnly: true},
		{Key: int16(kmsg.AllocateProducerIDs), MinVersion: 0, MaxVersion: 0, Handle: handleAllocateProducerIDs, ControllerOnly: true},
		{Key: int16(kmsg.AssignReplicasToDirs), MinVersion: 0, MaxVersion: 0, Handle: handleAssignReplicasToDirs, ControllerOnly: true},
		{Key: int16(kmsg.UpdateRaftVoter), MinVersion: 0, MaxVersion: 0, Handle: handleUpdateRaftVoter, ControllerOnly: true},
		{Key: int16(kmsg.Envelope), MinVersion: 0, MaxVersion: 0, Handle: handleEnvelope, ControllerOnly: true},
	}
}
