export interface ButtonProps {
  label: string;
  disabled?: boolean;
  onClick(): void;
}

/** A clickable button rendered with the design system's styles. */
export function Button({ label, disabled, onClick }: ButtonProps) {
  return (
    <button className="btn" disabled={disabled} onClick={onClick}>
      {label}
    </button>
  );
}
