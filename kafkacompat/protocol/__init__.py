"""The Kafka wire codec: primitives, generated messages, headers and framing."""
