import React, { forwardRef, useState } from 'react';
import { Icon } from './Icon';
import { theme } from './theme';

const buttonStyle = { padding: 8, color: theme.primary };
const linkStyle = { textDecoration: 'underline' };

type ButtonProps = { label: string; onClick?: () => void };

export const Button = forwardRef<HTMLButtonElement, ButtonProps>(function Button(
  { label, onClick },
  ref,
) {
  const [pressed, setPressed] = useState(false);
  return (
    <button ref={ref} style={buttonStyle} onClick={() => { setPressed(true); onClick?.(); }}>
      <Icon name={pressed ? 'check' : 'dot'} />
      {label}
    </button>
  );
});

export function Link({ href }: { href: string }) {
  return <a style={linkStyle} href={href} />;
}
