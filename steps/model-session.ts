import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { startFakeModel, type FakeModel, type FakeScript } from '../gateway/fake-model.js';
import type { GatewayCaps } from '../gateway/meter.js';
import type { AgentTools } from '../gateway/fake-actions.js';
import { startGateway, type GatewaySummary, type Marker, type Prices, type Provider, type UnboundedPolicy } from '../gateway/gateway.js';

/** One attempt's model: the recording gateway, in front of a real upstream or a scripted fake. */
export interface ModelSession {
  /** For agents on the host (local backend). */
  url: string;
  /** For sandboxed agents: the gateway's unix socket, forwarded inside. */
  socket?: string;
  summary(): GatewaySummary;
  /** Scripted calls the agent offered no tool for (a scripted model only): the attempt is an infrastructure fault. */
  scriptProblems(): string[];
  /** Aborted when the provider refuses the host's credential (Gateway.providerRefused). */
  providerRefused: AbortSignal;
  close(): Promise<void>;
}

export interface ModelOptions {
  upstream?: string;
  fakeScript?: FakeScript;
  /** The agent's shell tool and MCP tool names, which the fake script's actions run through. */
  tools?: AgentTools;
  caps: GatewayCaps;
  markers: Record<string, Marker>;
  /** MCP servers whose tools the first turn must offer (the treatment is not ready otherwise). */
  ready?: Record<string, Marker>;
  /** USD per million tokens by model (the price table); a model not in it is costed at the default price, estimated. */
  prices?: Prices;
  logFile: string;
  /** Headers with the real credential, set by the gateway on upstream requests (the agent never sees them). */
  upstreamAuth?: Record<string, string>;
  /** Whose model endpoints the gateway forwards; every other path is refused. */
  provider: Provider;
  /** When set, the gateway listens on a unix socket in this directory (sandboxed agents). */
  socketDir?: string | undefined;
  /** The gateway's policy and size limits (its defaults when not set: GATEWAY_LIMITS). */
  unboundedRequests?: UnboundedPolicy;
  maxRequestBytes?: number;
  maxReplyBytes?: number;
  maxLogBytes?: number;
}

export async function openModel(options: ModelOptions): Promise<ModelSession> {
  let fake: FakeModel | undefined;
  if (options.fakeScript) fake = await startFakeModel(options.fakeScript, { port: 0 }, options.tools ? { tools: options.tools } : {});
  const upstream = fake?.url ?? options.upstream!;
  let socket: string | undefined;
  if (options.socketDir) {
    mkdirSync(options.socketDir, { recursive: true, mode: 0o755 });
    socket = join(options.socketDir, 'gateway.sock');
  }
  const gateway = await startGateway({
    upstream,
    listen: socket ? { socket } : { port: 0 },
    caps: options.caps,
    provider: options.provider,
    markers: options.markers,
    ...(options.ready ? { ready: options.ready } : {}),
    ...(options.prices ? { prices: options.prices } : {}),
    logFile: options.logFile,
    unboundedRequests: options.unboundedRequests,
    maxRequestBytes: options.maxRequestBytes,
    maxReplyBytes: options.maxReplyBytes,
    maxLogBytes: options.maxLogBytes,
    ...(options.upstreamAuth ? { upstreamAuth: options.upstreamAuth } : {}),
  });
  return {
    url: gateway.url ?? '',
    ...(socket ? { socket } : {}),
    summary: () => gateway.summary(),
    scriptProblems: () => [...(fake?.problems ?? [])],
    providerRefused: gateway.providerRefused,
    close: async () => {
      await gateway.close();
      await fake?.close();
    },
  };
}
