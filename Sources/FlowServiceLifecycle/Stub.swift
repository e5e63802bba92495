import Flow
