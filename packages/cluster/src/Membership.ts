/**
 * This process's membership: the host name it holds (one process per host name at a time), its incarnation, its
 * lease in the cluster store, and the live hosts as of the last renewal. A host is live while its lease is younger
 * than `leaseMs`; a process that cannot renew for three quarters of a lease starts no more turns (it may be the
 * one thought dead), and one that could not for a whole lease stops its agents and comes back as a new incarnation.
 */
import { Clock, Context, Duration, Effect, Layer, Ref, SubscriptionRef } from "effect"
import { randomUUID } from "node:crypto"
import { ClusterConfigError } from "./ClusterConfig.js"
import type { ClusterSettings } from "./ClusterConfig.js"
import { ClusterStore } from "./ClusterStore.js"

/** The live hosts (host → incarnation) as read at `at` (Clock millis). */
export interface LiveView {
  readonly at: number
  readonly hosts: ReadonlyMap<string, string>
}

export interface MembershipShape {
  readonly settings: ClusterSettings
  /** `host:port` where this node's runner listens. */
  readonly address: string
  readonly incarnation: Ref.Ref<string>
  /** Live hosts and the incarnation each runs, as of the last renewal. */
  readonly live: SubscriptionRef.SubscriptionRef<LiveView>
  /** When this process last renewed its lease (Clock millis). */
  readonly renewedAt: Ref.Ref<number>
  /** Renewed within three quarters of a lease: this process surely still holds its host, and may start turns. */
  readonly fresh: Effect.Effect<boolean>
}

export class Membership extends Context.Tag("@flotta/cluster/Membership")<Membership, MembershipShape>() {
  static layer(settings: ClusterSettings) {
    return Layer.effect(Membership, join(settings))
  }
}

const join = (settings: ClusterSettings) =>
  Effect.gen(function*() {
    const store = yield* ClusterStore
    const found = Number(yield* store.settle("shardsPerGroup", String(settings.shardsPerGroup)))
    if (found !== settings.shardsPerGroup) {
      // Runners that hash entities into different numbers of shards never find each other's entities: every
      // call would time out, silently.
      return yield* new ClusterConfigError({
        reason: `cluster.shardsPerGroup is ${settings.shardsPerGroup} here, but the cluster at ${store.location} ` +
          `uses ${found}: every node must use the same number`
      })
    }
    const address = `${settings.advertise.host}:${settings.advertise.port}`
    // A restart after a crash: the previous process's lease must lapse first, as the other hosts see it.
    const deadline = (yield* Clock.currentTimeMillis) + 3 * settings.leaseMs
    let told = false
    while (true) {
      const previous = (yield* store.hosts).find((h) => h.host === settings.host)
      if (previous === undefined || previous.age > settings.leaseMs) break
      if ((yield* Clock.currentTimeMillis) > deadline) {
        return yield* new ClusterConfigError({
          reason: `host ${JSON.stringify(settings.host)} is live in the cluster already (the process at ` +
            `${previous.address} keeps renewing its lease): give this node another cluster.host`
        })
      }
      if (!told) {
        told = true
        yield* Effect.logWarning(`cluster: waiting for the lease of host ${settings.host}'s previous process to lapse`)
      }
      yield* Effect.sleep(Duration.millis(Math.max(50, Math.min(500, settings.leaseMs - previous.age + 50))))
    }
    const incarnation = randomUUID()
    yield* store.join(settings.host, address, incarnation)
    const now = yield* Clock.currentTimeMillis
    const renewedAt = yield* Ref.make(now)
    return {
      settings,
      address,
      incarnation: yield* Ref.make<string>(incarnation),
      live: yield* SubscriptionRef.make<LiveView>({
        at: now,
        hosts: new Map([
          ...(yield* store.hosts).filter((r) => r.age <= settings.leaseMs).map((r) => [r.host, r.incarnation] as const),
          [settings.host, incarnation]
        ])
      }),
      renewedAt,
      fresh: Effect.zipWith(
        Ref.get(renewedAt),
        Clock.currentTimeMillis,
        (at, now) => now - at < settings.leaseMs * 3 / 4
      )
    } satisfies MembershipShape
  })

/** How often a node renews its lease and looks around: a quarter lease. */
export const tickOf = (settings: ClusterSettings) => Duration.millis(Math.max(250, Math.floor(settings.leaseMs / 4)))
