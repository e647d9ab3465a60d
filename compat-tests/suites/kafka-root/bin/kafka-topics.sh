#!/usr/bin/env bash
# kafka-topics.sh ARGS... : Kafka 4.4's kafka-topics tool, against either broker (see ../README.md).
exec "${SAMSA_REPO:?SAMSA_REPO must name the samsa checkout}/compat-tests/kafka-ref/kafka-ref.sh" tool kafka-topics "$@"
