"""Real Apache Kafka, any release from 0.10 to 4.x, from Maven Central (see ``launcher``)."""

from kafkacompat.testing.apache_kafka.jars import java_for, release_home
from kafkacompat.testing.apache_kafka.launcher import MODES, ApacheKafka, modes_of

__all__ = ["MODES", "ApacheKafka", "java_for", "modes_of", "release_home"]
