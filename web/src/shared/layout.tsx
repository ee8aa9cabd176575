import type { ComponentChildren } from 'preact'
import { useLayoutEffect, useRef } from 'preact/hooks'
import { href } from './hooks'

/** The page frame: skip link, header, navigation and the main region (focused on navigation). */
export function Layout(props: {
  brand: string
  nav: { path: string; label: string }[]
  current: string
  who: ComponentChildren
  children: ComponentChildren
}) {
  const main = useRef<HTMLElement>(null)
  const first = useRef(true)
  useLayoutEffect(() => {
    // Move focus to the new view after a navigation (not on the first load), for keyboard and screen-reader users.
    if (first.current) first.current = false
    else main.current?.focus()
  }, [props.current])
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">{props.brand}</span>
        <div class="who">{props.who}</div>
      </header>
      <div class="body">
        <nav aria-label="Main">
          <ul>
            {props.nav.map((n) => (
              <li key={n.path}>
                <a href={href(n.path)} aria-current={props.current === n.path ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" ref={main} tabIndex={-1}>
          {props.children}
        </main>
      </div>
    </>
  )
}
