"""Describe (or delete) many consumer groups with one batched coordinator lookup (KIP-699).

    python examples/admin_groups.py --bootstrap 127.0.0.1:9092 --groups 500 [--delete]

Before KIP-699 an admin tool sent one FindCoordinator request per group.  Here
the lookup is planned: one request per 500 groups where the broker takes
FindCoordinator v4+, one per group (pipelined) where it does not.  The groups
are then grouped by coordinator, and each coordinator gets ONE DescribeGroups
(or DeleteGroups) request for all of its groups.

Needs: a broker that runs consumer groups (Kafka 0.9 or later, Tansu, or
`kafkacompat emulate`); groups nobody created are described as Dead.
``--delete`` needs DeleteGroups (Kafka 1.1 or later): every broker is checked
for it before anything is looked up.  Ends with one line and exit status 1
when the broker cannot be used.
"""

import argparse
from collections import Counter

import trio

import kafkacompat
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.error_codes import error_for
from kafkacompat.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
)


async def main(bootstrap: str, groups: list[str], delete: bool) -> None:
    async with kafkacompat.connect(bootstrap) as cluster:
        # 0. What --delete needs, checked on every broker before anything is asked.
        if delete:
            for node_id, caps in (await cluster.capabilities()).items():
                if not caps.lists_api(DeleteGroupsRequest.API_KEY):
                    raise SystemExit(f"node {node_id} ({caps.release_guess.text}) cannot delete groups: "
                                     "--delete needs DeleteGroups, Kafka 1.1 or later")

        # 1. Plan and run the lookup: batched where possible, retried per group.
        lookup = await cluster.find_coordinators(groups, "group")
        print(f"lookup: {lookup.describe()}")
        for group, failure in lookup.failed.items():
            print(f"  {group}: no coordinator ({failure.error_name}: {failure.message})")

        # 2. One request per coordinator, for all of its groups.
        for node_id, members in lookup.by_coordinator().items():
            if delete:
                deleted = await cluster.request(node_id, DeleteGroupsRequest(groups_names=members))
                outcome = Counter("deleted" if r.error_code == 0 else error_for(r.error_code).name
                                  for r in deleted.results)
                verb = "DeleteGroups"
            else:
                described = await cluster.request(node_id, DescribeGroupsRequest(groups=members))
                outcome = Counter(g.group_state or error_for(g.error_code).name for g in described.groups)
                verb = "DescribeGroups"
            print(f"node {node_id}: one {verb} for {len(members)} group(s): {dict(outcome)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
    parser.add_argument("--groups", type=int, default=100, help="how many groups (named PREFIX-N)")
    parser.add_argument("--prefix", default="example-group")
    parser.add_argument("--delete", action="store_true", help="delete the groups instead of describing them")
    args = parser.parse_args()
    names = [f"{args.prefix}-{n}" for n in range(args.groups)]
    try:
        trio.run(main, args.bootstrap, names, args.delete)
    except KafkaCompatError as exc:  # typed: unreachable, not Kafka, or no usable version
        raise SystemExit(f"cannot use {args.bootstrap}: {type(exc).__name__}: {exc}") from None
