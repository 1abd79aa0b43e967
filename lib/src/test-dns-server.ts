import dns2 from 'dns2';

// A real DNS server on loopback for tests (DESIGN.md: DNS is never mocked).

export interface TestZoneRecords {
  A?: string[];
  AAAA?: string[];
  MX?: { exchange: string; priority: number }[];
  NS?: string[];
  /** One entry per record, each a list of character-strings. */
  TXT?: string[][];
  /** Never answer, to exercise timeouts. */
  silent?: boolean;
  /** Answer SERVFAIL. */
  servfail?: boolean;
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, ready for `setServers` / DNS_SERVERS. */
  address: string;
  close(): Promise<void>;
}

const { Packet } = dns2;
// RFC 1035 response codes (dns2 has Packet.RCODE at runtime but not in its types).
const SERVFAIL = 2;
const NXDOMAIN = 3;

/** Answers from `zone` (keys are lower-case names); unknown names get NXDOMAIN. */
export async function startTestDnsServer(zone: Record<string, TestZoneRecords>): Promise<TestDnsServer> {
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const name = question.name.toLowerCase();
      const records = zone[name];
      if (records?.silent) return;
      if (!records) response.header.rcode = NXDOMAIN;
      else if (records.servfail) response.header.rcode = SERVFAIL;
      else {
        const base = { name: question.name, class: Packet.CLASS.IN, ttl: 60 };
        const answers: Record<number, object[]> = {
          [Packet.TYPE.A]: (records.A ?? []).map((address) => ({ ...base, type: Packet.TYPE.A, address })),
          [Packet.TYPE.AAAA]: (records.AAAA ?? []).map((address) => ({ ...base, type: Packet.TYPE.AAAA, address })),
          [Packet.TYPE.MX]: (records.MX ?? []).map((mx) => ({ ...base, type: Packet.TYPE.MX, ...mx })),
          [Packet.TYPE.NS]: (records.NS ?? []).map((ns) => ({ ...base, type: Packet.TYPE.NS, ns })),
          [Packet.TYPE.TXT]: (records.TXT ?? []).map((data) => ({ ...base, type: Packet.TYPE.TXT, data })),
        };
        response.answers.push(...((answers[question.type] ?? []) as typeof response.answers));
      }
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  return {
    address: `127.0.0.1:${addresses.udp!.port}`,
    close: async () => {
      await server.close();
    },
  };
}
