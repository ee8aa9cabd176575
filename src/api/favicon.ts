import { crc32, deflateSync } from 'node:zlib'

/** The icon's size in pixels (one 32×32 image: browsers scale it for tabs and bookmarks). */
const SIZE = 32
const BLUE = [0x1f, 0x4f, 0x8f, 0xff] as const
const WHITE = [0xff, 0xff, 0xff, 0xff] as const
const CLEAR = [0, 0, 0, 0] as const

/** The colour of pixel (x, y): a blue rounded square holding a white envelope. */
function pixel(x: number, y: number): readonly number[] {
  const corner = (cx: number, cy: number): boolean => (x - cx) ** 2 + (y - cy) ** 2 > 16
  if ((x < 4 && y < 4 && corner(4, 4)) || (x > 27 && y < 4 && corner(27, 4)) || (x < 4 && y > 27 && corner(4, 27)) || (x > 27 && y > 27 && corner(27, 27))) return CLEAR
  if (x < 6 || x > 25 || y < 9 || y > 23) return BLUE
  // The flap: a blue V from the top corners to the middle, two pixels thick.
  const flap = Math.abs(y - 9 - Math.min(x - 6, 25 - x) * 0.6)
  return flap < 1.2 ? BLUE : WHITE
}

/** A PNG chunk: length, type, data and the CRC of type and data. */
function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, 'latin1')
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0)
  return Buffer.concat([head, data, crc])
}

/** The icon as a PNG (RGBA, 8 bits a channel). */
function png(): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(SIZE, 0)
  ihdr.writeUInt32BE(SIZE, 4)
  ihdr.set([8, 6, 0, 0, 0], 8)
  const rows = Buffer.alloc(SIZE * (1 + SIZE * 4))
  for (let y = 0; y < SIZE; y++) for (let x = 0; x < SIZE; x++) rows.set(pixel(x, y), y * (1 + SIZE * 4) + 1 + x * 4)
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))])
}

/** /favicon.ico: an ICO file holding one 32×32 PNG image (every browser reads PNG inside ICO). */
export function faviconIco(): Buffer {
  const image = png()
  const head = Buffer.alloc(22)
  head.writeUInt16LE(1, 2) // type: icon
  head.writeUInt16LE(1, 4) // one image
  head.set([SIZE, SIZE, 0, 0], 6) // width, height, palette, reserved
  head.writeUInt16LE(1, 10) // colour planes
  head.writeUInt16LE(32, 12) // bits per pixel
  head.writeUInt32LE(image.length, 14)
  head.writeUInt32LE(22, 18) // where the image starts
  return Buffer.concat([head, image])
}
