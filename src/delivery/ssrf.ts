import ipaddr from 'ipaddr.js'
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'

/** The error code a refused destination carries (docs/delivery.md); classifies as dead. */
export const DESTINATION_NOT_ALLOWED = 'destination_not_allowed'

/** Thrown (or passed to a lookup callback) when a destination address is refused. */
export class DestinationNotAllowedError extends Error {
  readonly code = DESTINATION_NOT_ALLOWED
  constructor(readonly address: string) {
    super(`destination address ${address} is not allowed`)
    this.name = 'DestinationNotAllowedError'
  }
}

/** Decides whether the webhook sender may connect to an IP address. */
export interface AddressPolicy {
  /** True when `ip` is public, or non-public but inside an allowed network. */
  isAllowed(ip: string): boolean
}

type Addr = ipaddr.IPv4 | ipaddr.IPv6
type Cidr = [Addr, number]

/**
 * The IPv4 address an IPv6 address carries, for the forms that route to it: IPv4-mapped
 * (::ffff:a.b.c.d), RFC 6145 translated, IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and
 * 6to4 (2002:AABB:CCDD::). Null for every other IPv6 address.
 */
export function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = addr.parts
  const fromWords = (hi: number, lo: number): ipaddr.IPv4 => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255])
  const range = addr.range()
  if (range === 'ipv4Mapped' || range === 'rfc6145') return fromWords(p[6]!, p[7]!)
  if (p[0] === 0x64 && p[1] === 0xff9b && p.slice(2, 6).every((w) => w === 0)) return fromWords(p[6]!, p[7]!)
  if (range === '6to4') return fromWords(p[1]!, p[2]!)
  if (p.slice(0, 6).every((w) => w === 0) && (p[6] !== 0 || p[7]! > 1)) return fromWords(p[6]!, p[7]!)
  return null
}

function inAny(addr: Addr, nets: readonly Cidr[]): boolean {
  return nets.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net as never, bits))
}

/** Parses `POSTBOX_ALLOW_NETWORKS` CIDRs; throws on a malformed one. */
export function parseNetworks(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((c) => ipaddr.parseCIDR(c) as Cidr)
}

/**
 * The policy of docs/delivery.md ("Endpoints, signatures and safety"): only globally routable unicast addresses, unless an allowed network
 * contains the address (or the IPv4 address it embeds). Everything ipaddr.js classifies as a
 * special range (loopback, RFC 1918, link-local, CGNAT, fc00::/7, multicast, unspecified,
 * reserved, benchmarking, Teredo…) is refused.
 */
export function createAddressPolicy(allowNetworks: readonly string[] = []): AddressPolicy {
  const allowed = parseNetworks(allowNetworks)
  const check = (addr: Addr): boolean => {
    if (inAny(addr, allowed)) return true
    if (addr.kind() === 'ipv6') {
      const v4 = embeddedIPv4(addr as ipaddr.IPv6)
      if (v4) return check(v4)
    }
    return addr.range() === 'unicast'
  }
  return {
    isAllowed(ip) {
      if (!ipaddr.isValid(ip)) return false
      return check(ipaddr.parse(ip))
    },
  }
}

/** The bare IP of a URL hostname when it is an IP literal (brackets removed), else null. */
export function literalIp(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return isIP(bare) ? bare : null
}

/**
 * A `lookup` for net/tls.connect that resolves the name, drops every address the policy
 * refuses and fails with DestinationNotAllowedError when none is left. The socket connects to
 * the addresses this function returns, so there is no second lookup (no DNS rebinding).
 */
export function guardedLookup(policy: AddressPolicy, resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number }, callback: (...args: unknown[]) => void) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err)
      const list = addresses as LookupAddress[]
      const ok = list.filter((a) => policy.isAllowed(a.address))
      if (ok.length === 0) return callback(new DestinationNotAllowedError(list[0]?.address ?? hostname))
      if (options.all) return callback(null, ok)
      callback(null, ok[0]!.address, ok[0]!.family)
    })
  }) as LookupFunction
}
