/**
 * The `Agent` and `Host` entities as a host answers them: from its own engine, through Hosting. A call that
 * starts something (spawn, ask, prompt) runs once per `callId` and only while this host surely holds its lease.
 */
import * as Costs from "@flotta/core/Costs"
import type { AskOptions } from "@flotta/core/Flotta"
import { Duration, Effect, Layer } from "effect"
import { Hosting, withHost } from "./Hosting.js"
import * as Protocol from "./Protocol.js"
import { HostLost } from "./Protocol.js"

const timeoutOf = (ms: number | undefined): AskOptions => (ms === undefined ? {} : { timeout: Duration.millis(ms) })

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
    return Protocol.AgentEntity.of({
      spawn: ({ payload: p }) => once(p.callId, guard(p.name, h.startHere(p.name, p.options, p.epoch))),
      fork: ({ payload: p }) =>
        once(
          p.callId,
          guard(p.name, whenReady(p.source, h.forkHere(p.source, p.name, p.options, p.at)))
        ),
      ask: ({ payload: p }) =>
        once(p.callId, guard(p.name, whenReady(p.name, local.askResult(p.name, p.text, timeoutOf(p.timeoutMs))))),
      prompt: ({ payload: p }) =>
        once(p.callId, guard(p.name, whenReady(p.name, local.prompt(p.name, p.text, timeoutOf(p.timeoutMs))))),
      wait: ({ payload: p }) => whenReady(p.name, local.wait(p.name, p.turnId)),
      watch: ({ payload: p }) => whenReady(p.name, local.watch(p.name, p.turnId)),
      status: ({ payload: p }) => whenReady(p.name, local.status(p.name)),
      result: ({ payload: p }) => whenReady(p.name, local.result(p.name, p.turnId)),
      transcript: ({ payload: p }) => whenReady(p.name, local.transcript(p.name)),
      info: ({ payload: p }) => whenReady(p.name, Effect.map(local.info(p.name), withHost(me))),
      interrupt: ({ payload: p }) => whenReady(p.name, local.interrupt(p.name)),
      close: ({ payload: p }) => whenReady(p.name, h.closeHere(p.name)),
      unpark: ({ payload: p }) => whenReady(p.name, local.unpark({ agent: p.name })),
      compact: ({ payload: p }) => whenReady(p.name, local.compact(p.name, p.instructions)),
      clear: ({ payload: p }) => whenReady(p.name, local.clear(p.name)),
      hibernate: ({ payload: p }) => whenReady(p.name, local.hibernate(p.name)),
      wake: ({ payload: p }) => whenReady(p.name, local.wake(p.name))
    })
  }),
  { concurrency: "unbounded" }
)

const hostEntity = Protocol.HostEntity.toLayer(
  Effect.map(Hosting, ({ local, membership }) => {
    const me = membership.settings.host
    return Protocol.HostEntity.of({
      list: () => Effect.map(local.list(), (infos) => infos.map(withHost(me))),
      broadcast: ({ payload: p }) => local.broadcast(p.text, timeoutOf(p.timeoutMs)),
      approvals: ({ payload: p }) => local.approvals(p.query),
      decide: ({ payload: p }) => local.decide(p.id, p.decision),
      runs: ({ payload: p }) =>
        Effect.map(local.runs(p.query), (views) => views.map((view) => ({ ...view, host: me }))),
      runResult: ({ payload: p }) => local.runResult(p.name),
      awaitRun: ({ payload: p }) => local.awaitRun(p.name),
      diff: ({ payload: p }) => local.diff(p.name),
      costs: ({ payload: p }) => local.costs(Costs.queryOf(p))
    })
  }),
  { concurrency: "unbounded" }
)

/** The `Agent` and `Host` entities, answered from this host's engine. */
export const layer = Layer.mergeAll(agentEntity, hostEntity)
