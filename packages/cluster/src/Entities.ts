/**
 * The `Agent` and `Host` entities as a host answers them: from its own engine, through Hosting. Every operation of
 * the table is answered by one generic dispatch (its input decoded into the engine method's arguments); only what
 * is a host's own is written here: a start, a close (which frees the name), info (which names the host), and the
 * guard on a call that starts something (spawn, ask, prompt), which runs once per `callId` and only while this
 * host surely holds its lease.
 */
import * as Costs from "@flotta/core/Costs"
import { HostLost } from "@flotta/core/Errors"
import * as Operations from "@flotta/core/Operations"
import { Effect, Layer } from "effect"
import { Hosting, withHost } from "./Hosting.js"
import * as Protocol from "./Protocol.js"

/** The calls that start a turn: run once per `callId`, and only under a fresh lease. */
const STARTS: ReadonlySet<string> = new Set(["ask", "askResult", "prompt"])

type Payload = { readonly input: unknown; readonly callId: string }

const agentEntity = Protocol.AgentEntity.toLayer(
  Effect.map(Hosting, (h) => {
    const me = h.membership.settings.host
    const { local, once, whenReady } = h
    // A host that may have been thought dead starts nothing until its lease is renewed.
    const guard = <A, E>(name: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E | HostLost> =>
      Effect.flatMap(
        h.membership.fresh,
        (fresh): Effect.Effect<A, E | HostLost> => (fresh ? effect : Effect.fail(new HostLost({ name, host: me })))
      )
    const dispatch = (name: Operations.Name) => ({ payload }: { readonly payload: Payload }) => {
      const op: Operations.Any = Operations.operations[name]
      const agent: string = op.agent(payload.input) ?? ""
      const call = whenReady(agent, Operations.invoke(local, name, payload.input))
      return STARTS.has(name) ? once(payload.callId, guard(agent, call)) : call
    }
    return Protocol.AgentEntity.of({
      ...Protocol.handlersOf<ReturnType<typeof Protocol.AgentEntity.of>>(Protocol.agentOps, dispatch),
      spawn: ({ payload: p }) => once(p.callId, guard(p.name, h.startHere(p.name, p.options, p.epoch))),
      fork: ({ payload: p }) =>
        once(
          p.callId,
          guard(p.name, whenReady(p.source, h.forkHere(p.source, p.name, p.options, p.at)))
        ),
      info: ({ payload: { input } }) => whenReady(input.name, Effect.map(local.info(input.name), withHost(me))),
      close: ({ payload: { input } }) => whenReady(input.name, h.closeHere(input.name))
    })
  }),
  { concurrency: "unbounded" }
)

const hostEntity = Protocol.HostEntity.toLayer(
  Effect.map(Hosting, ({ local, membership }) => {
    const me = membership.settings.host
    const dispatch = (name: Operations.Name) => ({ payload }: { readonly payload: Payload }) =>
      Operations.invoke(local, name, payload.input)
    return Protocol.HostEntity.of({
      ...Protocol.handlersOf<ReturnType<typeof Protocol.HostEntity.of>>(Protocol.hostOps, dispatch),
      list: () => Effect.map(local.list(), (infos) => infos.map(withHost(me))),
      runs: ({ payload: { input } }) =>
        Effect.map(local.runs(input.query), (views) => views.map((view) => ({ ...view, host: me }))),
      costs: ({ payload: p }) => local.costs(Costs.queryOf(p))
    })
  }),
  { concurrency: "unbounded" }
)

/** The `Agent` and `Host` entities, answered from this host's engine. */
export const layer = Layer.mergeAll(agentEntity, hostEntity)
