import React, { forwardRef, useEffect, useMemo, useState } from 'react';
import type { ReactNode } from 'react';

interface Props {
  title: string;
  children?: ReactNode;
}

export const Card: React.FC<Props> = ({ title, children }) => {
  const [open, setOpen] = useState(false);

  useEffect(() => {
    document.title = title;
    return () => {
      document.title = '';
    };
  }, [title]);

  const heading = useMemo(() => title.toUpperCase(), [title]);

  return (
    <section onClick={() => setOpen(!open)}>
      <h2>{heading}</h2>
      {open && children}
    </section>
  );
};

export const FancyInput = forwardRef<HTMLInputElement, { label: string }>((props, ref) => {
  return <input ref={ref} aria-label={props.label} />;
});

export function Layout({ children }: { children: ReactNode }) {
  return <main>{children}</main>;
}

export default function App() {
  return (
    <Layout>
      <Card title="Hello">content</Card>
    </Layout>
  );
}

export const Memoized = React.memo(function Inner({ value }: { value: number }) {
  return <span>{value}</span>;
});

function formatLabel(label: string): string {
  return label.trim();
}
