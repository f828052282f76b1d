import React, { Component } from 'react';

interface CounterProps {
  step: number;
}

interface CounterState {
  count: number;
}

export class Counter extends React.Component<CounterProps, CounterState> {
  static defaultProps: Partial<CounterProps> = { step: 1 };

  state: CounterState = { count: 0 };

  componentDidMount(): void {
    document.title = `Count: ${this.state.count}`;
  }

  componentDidUpdate(prevProps: CounterProps): void {
    if (prevProps.step !== this.props.step) {
      this.setState({ count: 0 });
    }
  }

  componentWillUnmount(): void {
    document.title = '';
  }

  increment = () => {
    this.setState((s) => ({ count: s.count + this.props.step }));
  };

  render() {
    return (
      <button onClick={this.increment}>
        {this.state.count}
      </button>
    );
  }
}

export default class Pure extends Component {
  render() {
    return <div />;
  }
}
