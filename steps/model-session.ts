import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { startFakeModel, type FakeModel, type FakeScript } from '../gateway/fake-model.js';
import { startGateway, type GatewaySummary, type Marker, type Provider } from '../gateway/gateway.js';

/** One attempt's model: the recording gateway, in front of a real upstream or a scripted fake. */
export interface ModelSession {
  /** For agents on the host (local backend). */
  url: string;
  /** For sandboxed agents: the gateway's unix socket, forwarded inside. */
  socket?: string;
  summary(): GatewaySummary;
  /** HTTP statuses of the upstream's replies (a provider's 401/429/5xx is infrastructure, not the agent). */
  statuses(): number[];
  close(): Promise<void>;
}

export interface ModelOptions {
  upstream?: string;
  fakeScript?: FakeScript;
  caps: { maxTokens?: number; maxCostUsd?: number };
  markers: Record<string, Marker>;
  logFile: string;
  /** Headers with the real credential, set by the gateway on upstream requests (the agent never sees them). */
  upstreamAuth?: Record<string, string>;
  /** Whose model endpoints the gateway forwards; every other path is refused. */
  provider: Provider;
  /** When set, the gateway listens on a unix socket in this directory (sandboxed agents). */
  socketDir?: string | undefined;
}

export async function openModel(options: ModelOptions): Promise<ModelSession> {
  let fake: FakeModel | undefined;
  if (options.fakeScript) fake = await startFakeModel(options.fakeScript, { port: 0 });
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
    logFile: options.logFile,
    ...(options.upstreamAuth ? { upstreamAuth: options.upstreamAuth } : {}),
  });
  return {
    url: gateway.url ?? '',
    ...(socket ? { socket } : {}),
    summary: () => gateway.summary(),
    statuses: () => gateway.records().map((r) => (r as { status?: number }).status ?? 0),
    close: async () => {
      await gateway.close();
      await fake?.close();
    },
  };
}
