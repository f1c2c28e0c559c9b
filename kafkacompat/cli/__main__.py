import sys

from kafkacompat.cli import main

sys.exit(main())
