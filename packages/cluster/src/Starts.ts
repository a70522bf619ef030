/**
 * Where a new agent of the cluster starts: a spawn on the live host asked for, or else the one with the fewest
 * agents; a fork on its source's host, where the source's conversation is. Either is placed in the cluster store
 * first (its name is unique across the cluster), then started and claimed there; a start that fails frees the
 * name again.
 */
import type { ForkOptions } from "@flotta/core/Agent"
import { AgentOptions, dataOf } from "@flotta/core/AgentOptions"
import { AgentAlreadyExists, AgentNotFound, InvalidSpec } from "@flotta/core/Errors"
import type { StoreUnavailable } from "@flotta/core/Errors"
import { validateName } from "@flotta/core/Registry"
import { Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import type { HostingShape } from "./Hosting.js"
import * as Protocol from "./Protocol.js"
import { HostUnavailable } from "./Protocol.js"
import type { HostLost } from "./Protocol.js"

export interface StartDeps {
  readonly h: HostingShape
  /** The live hosts as the store has them now. */
  readonly liveNow: Effect.Effect<ReadonlyArray<{ readonly host: string }>, StoreUnavailable>
  /** A call to another host, which ends with HostLost if that host dies under it. */
  readonly remote: <A, E>(
    host: string,
    name: string,
    call: Effect.Effect<A, E>
  ) => Effect.Effect<A, Protocol.Reached<E> | HostLost | StoreUnavailable>
  readonly agentClient: Effect.Effect.Success<typeof Protocol.AgentEntity.client>
}

export const make = ({ agentClient, h, liveNow, remote }: StartDeps) => {
  const { store } = h
  const me = h.membership.settings.host

  /** The options as a placement keeps them and another host takes them: data only. */
  const toWire = (host: string, options: AgentOptions) =>
    host !== me && typeof options.permission === "function"
      ? Effect.fail(
        new InvalidSpec({
          path: "permission",
          reason: `a permission given as a function cannot be sent to host ${host}: give it as data, or start on ${me}`
        })
      )
      : Schema.validate(AgentOptions)(dataOf(options)).pipe(
        Effect.mapError((error) => new InvalidSpec({ path: "options", reason: error.message }))
      )

  const pickHost = Effect.fn("Cluster.pickHost")(function*(wanted: string | undefined) {
    const live = (yield* liveNow).map((r) => r.host).sort()
    if (wanted !== undefined) {
      if (!live.includes(wanted)) return yield* new HostUnavailable({ host: wanted, live })
      return wanted
    }
    const counts = new Map(live.map((host) => [host, 0]))
    for (const p of yield* store.placements) if (counts.has(p.host)) counts.set(p.host, counts.get(p.host)! + 1)
    return [...counts.entries()].sort((a, b) => a[1] - b[1])[0]![0]
  })

  const spawn = (name: string, options: AgentOptions = {}) =>
    Effect.gen(function*() {
      yield* validateName(name)
      const { host: wanted, ...rest } = options
      const host = yield* pickHost(wanted)
      const wire = yield* toWire(host, rest)
      if (!(yield* store.place(name, host, wire.cwd ?? "", wire))) return yield* new AgentAlreadyExists({ name })
      const started = host === me
        ? h.startHere(name, rest, 1)
        : remote(
          host,
          name,
          agentClient(Protocol.agentId(host, name)).spawn({ name, options: wire, epoch: 1, callId: randomUUID() })
        )
      return yield* started.pipe(Effect.tapError(() => Effect.ignore(store.remove(name, 1))))
    }).pipe(Effect.withSpan("flotta.spawn", { attributes: { "flotta.agent": name, "flotta.cluster": true } }))

  /** The source's host forks it (see `Hosting.forkHere`), and places the fork there. */
  const fork = (source: string, name: string, options: ForkOptions = {}) =>
    Effect.gen(function*() {
      yield* validateName(name)
      const placement = yield* store.placement(source)
      if (Option.isNone(placement)) {
        return yield* new AgentNotFound({ name: source, live: (yield* store.placements).map((p) => p.name) })
      }
      const host = placement.value.host
      const { at, host: wanted, ...rest } = options
      if (wanted !== undefined && wanted !== host) {
        return yield* new InvalidSpec({
          path: "host",
          reason: `a fork starts on its source's host (${host}), where ${source}'s conversation is`
        })
      }
      if (host === me) return yield* h.whenReady(source, h.forkHere(source, name, rest, at))
      const wire = yield* toWire(host, rest)
      return yield* remote(
        host,
        name,
        agentClient(Protocol.agentId(host, source)).fork({
          source,
          name,
          options: wire,
          callId: randomUUID(),
          ...(at === undefined ? {} : { at })
        })
      )
    }).pipe(Effect.withSpan("Cluster.fork", { attributes: { "flotta.agent": name, "flotta.source": source } }))

  return { spawn, fork } as const
}
