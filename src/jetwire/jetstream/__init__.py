"""JetStream: streams, consumers, publishing, key-value and object stores."""
