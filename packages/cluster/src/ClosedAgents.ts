/**
 * A closed agent of the cluster, read back: its name's placement is freed when it closes, and the host that closed
 * it keeps its record in its own store. Its info is asked of this host and every other live host at once (the
 * newest close wins when a name was closed on several), and its transcript of the host whose record that is.
 */
import type { AgentNotFound } from "@flotta/core/Errors"
import { Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import { withHost } from "./Hosting.js"
import * as Protocol from "./Protocol.js"
import type { StartDeps } from "./Starts.js"

/** What the closed agents' reads use of the cluster: the same as a start's (the hosts, a call to one of them). */
export type ClosedDeps = StartDeps

export const make = ({ agentClient, h, liveNow, remote }: ClosedDeps) => {
  const { local } = h
  const me = h.membership.settings.host

  /** A closed agent's info, with the host whose store has it; `missing` when no live host has it closed. */
  const info = (name: string, missing: AgentNotFound) =>
    Effect.gen(function*() {
      const answers = yield* Effect.forEach(
        (yield* liveNow).map((r) => r.host),
        (host) =>
          Effect.option(
            host === me
              ? Effect.map(local.info(name), withHost(me))
              : remote(
                host,
                name,
                Protocol.callAgent(agentClient(Protocol.agentId(host, name)), "info", { name }, randomUUID())
              )
          ),
        { concurrency: "unbounded" }
      )
      const closed = answers.flatMap((a) => (Option.isSome(a) && a.value.status === "closed" ? [a.value] : []))
        .sort((a, b) => (b.closedAt ?? "").localeCompare(a.closedAt ?? ""))
      return closed[0] ?? (yield* missing)
    })

  /** A closed agent's turns, from the host whose store has it. */
  const transcript = (name: string, missing: AgentNotFound) =>
    Effect.flatMap(info(name, missing), ({ host }) =>
      host === undefined || host === me
        ? local.transcript(name)
        : remote(
          host,
          name,
          Protocol.callAgent(
            agentClient(Protocol.agentId(host, name)),
            "transcript",
            { name },
            randomUUID()
          )
        ))

  return { info, transcript } as const
}
