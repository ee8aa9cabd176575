import { describe, expect, it } from 'vitest'
import { markdownToHtml } from './markdown.js'

describe('markdownToHtml', () => {
  it('renders emphasis, lists and safe links', () => {
    const html = markdownToHtml('**Hi** _Ann_\n\n- one\n- two\n\n[open](https://example.com/x?a=1&b=2) [mail](mailto:a@b.c) [here](/inbox)')
    expect(html).toContain('<strong>Hi</strong> <em>Ann</em>')
    expect(html).toContain('<li>one</li>')
    expect(html).toContain('<a href="https://example.com/x?a=1&amp;b=2">open</a>')
    expect(html).toContain('<a href="mailto:a@b.c">mail</a>')
    expect(html).toContain('<a href="/inbox">here</a>')
  })

  it('shows raw HTML as text', () => {
    const html = markdownToHtml('before <img src=x onerror="alert(1)"> after\n\n<script>alert(2)</script>')
    expect(html).not.toMatch(/<img|<script/i)
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;')
    expect(html).toContain('&lt;script&gt;')
  })

  it('drops link and image targets that are not web or mail addresses, keeping their text', () => {
    const html = markdownToHtml('[click](javascript:alert(1)) ![pic](data:image/png;base64,AAAA) [proto](//evil.example/x)')
    expect(html).not.toMatch(/javascript:|data:|href="\/\/evil/i)
    expect(html).toContain('click')
    expect(html).toContain('pic')
    expect(html).toContain('proto')
  })
})
